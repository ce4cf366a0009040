package replica

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/vfs"
)

// quietLeader is a leader core of replicas 1, 2, 3 (all in the ISR) whose
// wrapper admits quiet fetches as internal/node and internal/sim do: it
// keeps their times in quiet and hands them to the core.
type quietLeader struct {
	t     *testing.T
	r     *Replica
	cfg   config.TopicConfig
	quiet map[int32]int64
}

func newQuietLeader(t *testing.T) *quietLeader {
	t.Helper()
	cfg, err := config.ResolveTopic(mustBroker(), nil)
	if err != nil {
		t.Fatal(err)
	}
	q := &quietLeader{t: t, cfg: cfg, quiet: map[int32]int64{}}
	q.r, err = Open(vfs.NewMem(), "p-0", "p-0", cfg, Options{LocalID: 1, ReplicaLagTimeMaxMs: 30000,
		QuietFetchMs: func(id int32) int64 {
			if ms, ok := q.quiet[id]; ok {
				return ms
			}
			return math.MinInt64
		}})
	if err != nil {
		t.Fatal(err)
	}
	st := metadata.Partition{Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}
	if _, err := q.r.Apply(st, metadata.RoleLeader, cfg, 0); err != nil {
		t.Fatal(err)
	}
	return q
}

// produce appends one record at nowMs and makes it durable.
func (q *quietLeader) produce(nowMs int64) {
	q.t.Helper()
	q.r.Produce(api.ProduceParams{Acks: 1, Timeout: time.Second, Batches: [][]byte{batch.Build([][]byte{[]byte("v")}, nowMs)}}, func(api.ProduceResult) {}, nowMs)
	d, err := q.r.Log().Sync()
	q.r.Synced(d, err)
}

// fetch is follower id's fetch from offset at nowMs: admitted as quiet if
// the core's Quiet lets it (reported), through Admit otherwise.
func (q *quietLeader) fetch(id int32, offset, nowMs int64) (quiet bool) {
	q.t.Helper()
	fp := api.FetchPartition{Offset: offset, CurrentLeaderEpoch: 4, LastFetchedEpoch: 4}
	qs := q.r.Quiet()
	qs.Followers, _ = q.r.Followers(nil)
	if _, ok := QuietAdmits(qs, fp, id); ok {
		q.quiet[id] = nowMs
		return true
	}
	rd, err := q.r.Admit(fp, id, true, nowMs, nil)
	if err != nil {
		q.t.Fatalf("follower %d fetch at %d: %v", id, offset, err)
	}
	q.apply(rd)
	return false
}

// tick is the ISR tick at nowMs; a proposed ISR is committed at once.
func (q *quietLeader) tick(nowMs int64) []int32 {
	q.t.Helper()
	rd := q.r.Tick(nowMs, nil)
	q.apply(rd)
	if rd.Propose == nil {
		return nil
	}
	return rd.Propose.NewISR
}

func (q *quietLeader) apply(rd Ready) {
	q.t.Helper()
	if rd.Propose == nil {
		return
	}
	st := q.r.State()
	st.ISR, st.PartitionEpoch = rd.Propose.NewISR, st.PartitionEpoch+1
	if _, err := q.r.Apply(st, metadata.RoleLeader, q.cfg, 0); err != nil {
		q.t.Fatal(err)
	}
}

// TestQuietFetchesKeepTheISRRule: an idle partition's follower fetches are
// admitted as quiet (nothing recorded in the core, only their time kept by
// the wrapper), and Kafka's ISR rule still holds with those times
// (ReplicaState.updateFetchState, replica.lag.time.max.ms = 30 s): a
// follower that keeps fetching stays in the ISR when records arrive after
// a long idle time, one that stopped fetching drops out once the leader
// has new records and replica.lag.time.max.ms has passed since its last
// fetch, and not before.
func TestQuietFetchesKeepTheISRRule(t *testing.T) {
	q := newQuietLeader(t)
	q.produce(1)
	if q.r.Quiet().OK {
		t.Fatal("quiet before any follower reported its position")
	}
	q.fetch(2, 1, 100)
	if q.r.Quiet().OK {
		t.Fatal("quiet with follower 3's position unknown")
	}
	q.fetch(3, 1, 100)
	if qs := q.r.Quiet(); !qs.OK || qs.LogEnd != 1 || qs.Epoch != 4 {
		t.Fatalf("Quiet = %+v with both followers at the log end 1, want quiet at 1 in epoch 4", qs)
	}
	qs := q.r.Quiet()
	qs.Followers, _ = q.r.Followers(nil)
	for _, c := range []struct {
		id     int32
		offset int64
		epoch  int32
	}{{2, 0, 4}, {2, 1, 3}, {2, 1, 5}, {1, 1, 4}, {4, 1, 4}} {
		if _, ok := QuietAdmits(qs, api.FetchPartition{Offset: c.offset, CurrentLeaderEpoch: c.epoch}, c.id); ok {
			t.Errorf("QuietAdmits(replica %d, offset %d, epoch %d) while quiet at 1 in epoch 4", c.id, c.offset, c.epoch)
		}
	}

	// 90 s idle: both fetch twice a second until 50 s, then only 2.
	for now := int64(500); now <= 90_000; now += 500 {
		if !q.fetch(2, 1, now) {
			t.Fatalf("follower 2's idle fetch at %d ms was not quiet", now)
		}
		if now <= 50_000 && !q.fetch(3, 1, now) {
			t.Fatalf("follower 3's idle fetch at %d ms was not quiet", now)
		}
		if !q.r.TickIdle() {
			t.Fatalf("not tick-idle at %d ms, quiet %+v", now, q.r.Quiet())
		}
		if isr := q.tick(now); isr != nil {
			t.Fatalf("idle tick at %d ms proposed ISR %v (nothing produced, every follower at the log end)", now, isr)
		}
	}
	// Records arrive: follower 3's last fetch was 40 s ago, but until now
	// it held the whole log; it is out as soon as it is behind.
	q.produce(90_000)
	if q.r.Quiet().OK || q.r.TickIdle() {
		t.Fatal("quiet or tick-idle with both followers behind the new record")
	}
	if isr := q.tick(90_001); !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("tick after the append proposed ISR %v, want [1 2]: follower 3 stopped fetching at 50 s, follower 2 fetched until 90 s", isr)
	}

	// Follower 2 catches up; then it too stops fetching, and is shrunk
	// only replica.lag.time.max.ms after its last (quiet) fetch.
	q.fetch(2, 1, 90_100)
	q.fetch(2, 2, 90_200)
	if qs := q.r.Quiet(); qs.OK {
		t.Fatalf("Quiet = %+v with follower 3 out of the ISR", qs)
	}
	q2 := newQuietLeader(t)
	q2.produce(1)
	q2.fetch(2, 1, 100)
	q2.fetch(3, 1, 100)
	for now := int64(500); now <= 40_000; now += 500 {
		q2.fetch(2, 1, now)
		q2.fetch(3, 1, now)
		q2.tick(now)
	}
	// Both stop fetching at 40 s; the record at 60 s leaves both behind.
	q2.produce(60_000)
	for _, now := range []int64{60_001, 69_999, 70_000} {
		if isr := q2.tick(now); isr != nil {
			t.Fatalf("tick at %d ms proposed ISR %v: the followers' last fetch at 40 s found them caught up, within 30 s", now, isr)
		}
	}
	if isr := q2.tick(70_001); !slices.Equal(isr, []int32{1}) {
		t.Fatalf("tick at 70.001 s proposed ISR %v, want [1]: neither follower fetched since 40 s", isr)
	}
}
