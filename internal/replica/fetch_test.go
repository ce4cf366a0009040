package replica

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/vfs"
)

// coreSource is replica.Source over a bare core, as the simulator wraps it.
type coreSource struct{ r *Replica }

func (s coreSource) Admit(fp api.FetchPartition, replicaID int32, record bool, nowMs int64) error {
	_, err := s.r.Admit(fp, replicaID, record, nowMs, nil)
	return err
}
func (s coreSource) Bounds() (int64, int64, int64) {
	return s.r.HighWatermark(), s.r.LastStableOffset(), s.r.Log().LogStartOffset()
}
func (s coreSource) Read(offset int64, maxBytes int, minOne bool, mode ReadMode) (api.FetchResult, error) {
	return s.r.Read(offset, maxBytes, minOne, mode)
}
func (s coreSource) Divergence(fp api.FetchPartition) *api.EpochEnd {
	return DivergenceOf(s.r.Log(), fp)
}

// leaderOf opens partition name on fs, led by broker 1 in epoch with
// follower 2 in the ISR, holding records records (fsynced).
func leaderOf(t *testing.T, fs *vfs.Mem, name string, epoch int32, records int) *Replica {
	t.Helper()
	cfg, err := config.ResolveTopic(mustBroker(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(fs, name, name, cfg, Options{LocalID: 1, ReplicaLagTimeMaxMs: 30000})
	if err != nil {
		t.Fatal(err)
	}
	st := metadata.Partition{Leader: 1, LeaderEpoch: epoch, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}
	if _, err := r.Apply(st, metadata.RoleLeader, cfg, 0); err != nil {
		t.Fatal(err)
	}
	values := make([][]byte, records)
	for i := range values {
		values[i] = []byte("value")
	}
	r.Produce(api.ProduceParams{Acks: 0, Timeout: time.Second, Batches: [][]byte{batch.Build(values, 1)}}, func(api.ProduceResult) {}, 1)
	d, err := r.Log().Sync()
	r.Synced(d, err)
	return r
}

// TestReadFetchRecordsEveryFollowerPosition (issue 11, item 2): a follower's
// position is recorded for every partition of its fetch, also one the byte
// budget leaves no room for. internal/node checked the budget first, so a
// caught-up follower fetching a second partition behind a full first one
// held that partition's high watermark back; Kafka updates the follower's
// fetch state for every partition whatever the response's size.
func TestReadFetchRecordsEveryFollowerPosition(t *testing.T) {
	fs := vfs.NewMem()
	a, b := leaderOf(t, fs, "a-0", 0, 3), leaderOf(t, fs, "b-0", 0, 3)
	params := api.FetchParams{ReplicaID: 2, MaxBytes: 1, MinBytes: 1, Partitions: []api.FetchPartition{
		{Offset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: 0, LastFetchedEpoch: -1},
		{Offset: 3, MaxBytes: 1 << 20, CurrentLeaderEpoch: 0, LastFetchedEpoch: 0},
	}}
	srcs := []Source{coreSource{a}, coreSource{b}}
	results, enough := ReadFetch(params, func(i int) (Source, error) { return srcs[i], nil }, true, 100, nil)
	if !enough || len(results[0].Records) == 0 {
		t.Fatalf("the first partition returned %d bytes (enough %v), want at least one batch", len(results[0].Records), enough)
	}
	if len(results[1].Records) != 0 || results[1].Err != nil {
		t.Fatalf("second partition: %+v, want no data (budget spent)", results[1])
	}
	if got := b.HighWatermark(); got != 3 {
		t.Fatalf("second partition's high watermark %d, want 3: the follower's position there was not recorded", got)
	}
	if got := a.HighWatermark(); got != 0 {
		t.Fatalf("first partition's high watermark %d, want 0 (the follower holds nothing yet)", got)
	}
}

// TestReadFetchChecks: the plan's other rules, the same for both runtimes.
func TestReadFetchChecks(t *testing.T) {
	fs := vfs.NewMem()
	r := leaderOf(t, fs, "c-0", 4, 3)
	src := []Source{coreSource{r}}
	lookup := func(int) (Source, error) { return src[0], nil }
	one := func(fp api.FetchPartition, replica int32, minBytes int32) (api.FetchResult, bool) {
		res, enough := ReadFetch(api.FetchParams{ReplicaID: replica, MaxBytes: 1 << 20, MinBytes: minBytes, Partitions: []api.FetchPartition{fp}}, lookup, true, 100, nil)
		return res[0], enough
	}
	// KIP-320: an older epoch is fenced, a newer one unknown yet.
	if res, enough := one(api.FetchPartition{CurrentLeaderEpoch: 3, LastFetchedEpoch: -1, MaxBytes: 1 << 20}, -1, 1); !errors.Is(res.Err, kerr.FencedLeaderEpoch) || !enough {
		t.Errorf("older epoch: %v, enough %v", res.Err, enough)
	}
	if res, _ := one(api.FetchPartition{CurrentLeaderEpoch: 5, LastFetchedEpoch: -1, MaxBytes: 1 << 20}, -1, 1); !errors.Is(res.Err, kerr.UnknownLeaderEpoch) {
		t.Errorf("newer epoch: %v", res.Err)
	}
	// A consumer reads below the high watermark (0: the follower has not
	// reported), so min_bytes is not met and the fetch waits.
	if res, enough := one(api.FetchPartition{Offset: 0, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, MaxBytes: 1 << 20}, -1, 1); len(res.Records) != 0 || enough {
		t.Errorf("consumer read above the high watermark: %d bytes, enough %v", len(res.Records), enough)
	}
	// At least one whole batch although the partition's limit is 1 byte.
	if res, enough := one(api.FetchPartition{Offset: 0, CurrentLeaderEpoch: 4, LastFetchedEpoch: -1, MaxBytes: 1}, 2, 1); len(res.Records) == 0 || !enough {
		t.Errorf("follower read: %d bytes, enough %v, want one whole batch", len(res.Records), enough)
	}
	// A follower whose last epoch (2) the leader never had diverges at
	// the leader's first epoch start.
	res, enough := one(api.FetchPartition{Offset: 3, CurrentLeaderEpoch: 4, LastFetchedEpoch: 2, MaxBytes: 1 << 20}, 2, 1)
	if res.Diverging == nil || !enough {
		t.Fatalf("diverging follower: %+v, enough %v", res, enough)
	}
	// A fetch of a partition this broker does not lead.
	if _, err := r.Apply(metadata.Partition{Leader: 2, LeaderEpoch: 5, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, metadata.RoleFollower, r.Config(), 10); err != nil {
		t.Fatal(err)
	}
	if res, _ := one(api.FetchPartition{CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, MaxBytes: 1 << 20}, -1, 1); !errors.Is(res.Err, kerr.NotLeaderForPartition) {
		t.Errorf("follower served a fetch: %v", res.Err)
	}
}

// TestBrokenInvariantFences: an impossible state (the leader's high
// watermark below the one already published) is reported in the Ready and fences the
// replica: no more writes or reads. With the invariants tag it panics.
func TestBrokenInvariantFences(t *testing.T) {
	fs := vfs.NewMem()
	r := leaderOf(t, fs, "d-0", 0, 2)
	var rd Ready
	func() {
		defer func() {
			if p := recover(); p != nil {
				if !invariantPanics() {
					t.Fatalf("panicked without the invariants tag: %v", p)
				}
				t.Skip("panicked, as built with -tags invariants")
			}
		}()
		r.hw = 99
		r.progress(&rd)
	}()
	if len(rd.Violations) != 1 {
		t.Fatalf("violations %q, want one", rd.Violations)
	}
	if r.Failed() == nil || !r.Offline() {
		t.Fatal("a replica with a broken invariant still serves")
	}
	if _, err := r.Read(0, 1<<20, true, ReadReplica); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("read after a broken invariant: %v", err)
	}
}
