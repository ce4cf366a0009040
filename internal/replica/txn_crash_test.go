package replica

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/vfs"
)

// txnTruth recomputes, from the log's batches alone (not the producer
// table), the open transactions' first offsets and the aborted
// transactions with Kafka's index fields.
func txnTruth(t *testing.T, l *storage.Log) (open map[int64]int64, aborted []storage.AbortedTxn) {
	t.Helper()
	open = map[int64]int64{}
	err := l.ScanBatches(l.LogStartOffset(), func(h batch.Header, control []byte) error {
		if !h.IsControl() {
			if _, ok := open[h.ProducerID]; h.IsTransactional() && !ok {
				open[h.ProducerID] = h.BaseOffset
			}
			return nil
		}
		m, err := batch.ParseMarker(control)
		if err != nil {
			return err
		}
		first, ok := open[h.ProducerID]
		if !ok {
			first = h.BaseOffset
		}
		delete(open, h.ProducerID)
		if !m.Commit {
			lso := h.LastOffset() + 1
			for _, f := range open {
				lso = min(lso, f)
			}
			aborted = append(aborted, storage.AbortedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: h.LastOffset(), LastStableOffset: lso})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return open, aborted
}

func openSoleLeader(t *testing.T, fs vfs.FS, epoch int32) *Replica {
	t.Helper()
	cfg, err := config.ResolveTopic(mustBroker(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.SegmentBytes = 2048 // several segments, each with its .txnindex
	r, err := Open(fs, "t-0", "t-0", cfg, Options{LocalID: 1})
	if err != nil {
		t.Fatal(err)
	}
	st := metadata.Partition{Leader: 1, LeaderEpoch: epoch, PartitionEpoch: epoch, Replicas: []int32{1}, ISR: []int32{1}}
	if _, err := r.Apply(st, metadata.RoleLeader, cfg, 0); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestTransactionsSurviveCrashes writes transactional batches, markers
// and plain batches through the leader core, fsyncing now and then, and
// cuts power with torn writes at a random point: the reopened replica's
// open transactions, last stable offset and aborted-transaction index are
// exactly what its recovered log says.
func TestTransactionsSurviveCrashes(t *testing.T) {
	var abortedSeen, openSeen, repaired int
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		fs := vfs.NewMem()
		r := openSoleLeader(t, fs, 0)
		seq := map[int64]int32{}
		ops := 20 + rng.IntN(80)
		for i := range ops {
			now := int64(i + 1)
			pid := int64(1 + rng.IntN(4))
			switch k := rng.IntN(10); {
			case k < 5:
				b := batch.BuildTransactional([][]byte{[]byte("v")}, now, pid, 0, seq[pid])
				seq[pid]++
				r.Produce(api.ProduceParams{Acks: 1, Timeout: time.Second, Batches: [][]byte{b}}, func(api.ProduceResult) {}, now)
			case k < 8:
				r.WriteTxnMarker(api.TxnMarkerParams{ProducerID: pid, Commit: k == 5, Timeout: time.Second}, func(api.ProduceResult) {}, now)
			default:
				r.Produce(api.ProduceParams{Acks: 1, Timeout: time.Second, Batches: [][]byte{batch.Build([][]byte{[]byte("p")}, now)}}, func(api.ProduceResult) {}, now)
			}
			if rng.IntN(4) == 0 {
				d, err := r.Log().Sync()
				r.Synced(d, err)
			}
		}
		fs.Crash(vfs.CrashOptions{TornWrites: true, Seed: seed})

		// What the index files say after the crash, before the replica's
		// check repairs them.
		l, err := storage.Open(fs, "t-0", storage.DefaultConfig(), storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		found := l.AllAbortedTxns()
		l.Close()
		r = openSoleLeader(t, fs, 1)
		open, aborted := txnTruth(t, r.Log())
		abortedSeen, openSeen = abortedSeen+len(aborted), openSeen+len(open)
		if !slices.Equal(found, aborted) {
			repaired++
		}
		if got := r.Log().AllAbortedTxns(); !slices.Equal(got, aborted) {
			t.Fatalf("seed %d: index %v, the log says %v", seed, got, aborted)
		}
		if r.OngoingTransactions() != len(open) {
			t.Fatalf("seed %d: %d open transactions, the log says %v", seed, r.OngoingTransactions(), open)
		}
		want := r.HighWatermark()
		for _, first := range open {
			want = min(want, first)
		}
		if r.LastStableOffset() != want {
			t.Fatalf("seed %d: last stable offset %d, want %d (hw %d, open %v)", seed, r.LastStableOffset(), want, r.HighWatermark(), open)
		}
		r.Log().Close()
	}
	if abortedSeen == 0 || openSeen == 0 || repaired == 0 {
		t.Fatalf("the seeds exercised too little: %d aborted, %d open transactions, %d indexes repaired", abortedSeen, openSeen, repaired)
	}
	t.Logf("%d aborted, %d open transactions recovered; %d indexes repaired after the crash", abortedSeen, openSeen, repaired)
}

// A marker whose index entry cannot be written fails the log (a
// read_committed reader must not be served the aborted records without
// it) and is answered KAFKA_STORAGE_ERROR; the reopened replica rebuilds
// the entry from the marker in the log.
func TestTxnIndexWriteFailure(t *testing.T) {
	fs := vfs.NewMem()
	r := openSoleLeader(t, fs, 0)
	b := batch.BuildTransactional([][]byte{[]byte("v")}, 1, 9, 0, 0)
	r.Produce(api.ProduceParams{Acks: 1, Timeout: time.Second, Batches: [][]byte{b}}, func(api.ProduceResult) {}, 1)
	fs.SetFault(func(op vfs.Op, path string) error {
		if strings.HasSuffix(path, ".txnindex") && (op == vfs.OpWrite || op == vfs.OpOpen) {
			return syscall.EIO
		}
		return nil
	})
	var res api.ProduceResult
	_, rd := r.WriteTxnMarker(api.TxnMarkerParams{ProducerID: 9, Timeout: time.Second}, func(got api.ProduceResult) { res = got }, 2)
	for _, a := range rd.Answers {
		a.Done(a.Result)
	}
	if res.Err == nil || !errors.Is(r.Log().Failed(), syscall.EIO) {
		t.Fatalf("marker answered %v, log failed %v", res.Err, r.Log().Failed())
	}
	fs.SetFault(nil)
	r.Log().Close() // a kill -9: the page cache keeps the marker
	r = openSoleLeader(t, fs, 1)
	defer r.Log().Close()
	_, aborted := txnTruth(t, r.Log())
	if got := r.Log().AllAbortedTxns(); len(aborted) != 1 || !slices.Equal(got, aborted) {
		t.Fatalf("index %v after reopen, the log says %v", got, aborted)
	}
}
