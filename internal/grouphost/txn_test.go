package grouphost

import (
	"testing"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/storage"
)

// txnRecords are the records (and batch) of producer pid's transactional
// commit of offsets for groupID.
func txnRecords(t *testing.T, groupID string, pid int64, epoch int16, offsets ...group.CommitOffset) ([]group.Record, *group.TxnBatch) {
	t.Helper()
	c, err := group.New(group.DefaultConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	_, out := c.TxnCommitOffsets(0, group.TxnCommitRequest{GroupID: groupID, ProducerID: pid, ProducerEpoch: epoch, Generation: -1, Offsets: offsets})
	if len(out.Records) == 0 || out.Txn == nil {
		t.Fatalf("the transactional commit made %d records, txn %v", len(out.Records), out.Txn)
	}
	return out.Records, out.Txn
}

// TestReplayRebuildsTransactionalOffsets: the log of a coordinator that
// moved holds transactional batches and their producers' markers (Kafka's
// format, as WriteTxnMarkers writes them); the replay commits, drops and
// keeps pending exactly as the coordinator before did.
func TestReplayRebuildsTransactionalOffsets(t *testing.T) {
	l := openLog(t, storage.DefaultConfig())
	off := func(p int32, o int64) group.CommitOffset {
		return group.CommitOffset{Topic: "t", Partition: p, Offset: o, LeaderEpoch: -1}
	}
	appendBatch(t, l, recordsBatch(commitRecords(t, "g", off(0, 1), off(1, 1), off(2, 1)), 0), 0)
	recs, tb := txnRecords(t, "g", 7, 0, off(0, 10))
	appendBatch(t, l, BuildBatch(recs, tb, 0), 0)
	recs, tb = txnRecords(t, "g", 8, 0, off(1, 20))
	appendBatch(t, l, BuildBatch(recs, tb, 0), 0)
	recs, tb = txnRecords(t, "g", 9, 0, off(2, 30))
	appendBatch(t, l, BuildBatch(recs, tb, 0), 0)
	appendBatch(t, l, batch.BuildMarker(7, 0, batch.Marker{Commit: true, CoordinatorEpoch: 1}, 0), 0)
	appendBatch(t, l, batch.BuildMarker(8, 1, batch.Marker{Commit: false, CoordinatorEpoch: 1}, 0), 0)

	loaded, err := Replay(group.DefaultConfig(), 1, l, "p", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Problems) != 0 {
		t.Fatalf("problems: %v", loaded.Problems)
	}
	got := loaded.Coordinator.FetchOffsets("g", []group.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}, {Topic: "t", Partition: 2}})
	want := []struct {
		offset   int64
		unstable bool
	}{{10, false}, {1, false}, {1, true}}
	for i, w := range want {
		if got[i].Offset != w.offset || got[i].Unstable != w.unstable {
			t.Fatalf("t-%d: offset %d unstable %v, want %d %v", i, got[i].Offset, got[i].Unstable, w.offset, w.unstable)
		}
	}
	// The abort came at a newer epoch (the producer was fenced): the old
	// epoch's commits are refused.
	res, out := loaded.Coordinator.TxnCommitOffsets(0, group.TxnCommitRequest{GroupID: "g", ProducerID: 8, ProducerEpoch: 0, Generation: -1, Offsets: []group.CommitOffset{off(1, 21)}})
	if res[0].Err == nil || len(out.Records) != 0 {
		t.Fatalf("a commit of producer 8 at the fenced epoch 0 answered %v with %d records", res[0].Err, len(out.Records))
	}
}

// TestTxnCompletedWhileLoadingIsHeld: a marker committed while the Host
// loads may lie past the end the replay read; its completion is applied
// once the Host is active.
func TestTxnCompletedWhileLoadingIsHeld(t *testing.T) {
	l := openLog(t, storage.DefaultConfig())
	recs, tb := txnRecords(t, "g", 7, 0, group.CommitOffset{Topic: "t", Partition: 0, Offset: 10, LeaderEpoch: -1})
	appendBatch(t, l, BuildBatch(recs, tb, 0), 0)
	loaded, err := Replay(group.DefaultConfig(), 1, l, "p", 0)
	if err != nil {
		t.Fatal(err)
	}
	h := &testHandle{t: t, host: New("p")}
	b := Backend{Hosts: testHosts{[]*testHandle{h}}}
	b.TxnCompleted(0, 7, true) // loading: held
	h.carry(h.host.Activate(0, loaded))
	h.completeAll(nil)
	var fetched []group.FetchedOffset
	b.FetchOffsets("g", []group.TopicPartition{{Topic: "t", Partition: 0}}, func(f []group.FetchedOffset, err error) {
		if err != nil {
			t.Fatal(err)
		}
		fetched = f
	})
	if len(fetched) != 1 || fetched[0].Offset != 10 || fetched[0].Unstable {
		t.Fatalf("fetched %+v, want t-0=10 committed", fetched)
	}
}

// TestTxnCommitIsATransactionalBatch: the Backend's write of a
// transactional commit is the producer's transactional batch.
func TestTxnCommitIsATransactionalBatch(t *testing.T) {
	h := newActive(t)
	b := Backend{Hosts: testHosts{[]*testHandle{h}}}
	var answered []error
	b.TxnCommitOffsets(group.TxnCommitRequest{GroupID: "g", ProducerID: 5, ProducerEpoch: 2, Generation: -1,
		Offsets: []group.CommitOffset{{Topic: "t", Partition: 0, Offset: 3, LeaderEpoch: -1}}},
		func(res []group.PartitionError, err error) { answered = append(answered, err, res[0].Err) })
	if len(h.pending) != 1 || h.pending[0].Txn == nil || *h.pending[0].Txn != (group.TxnBatch{ProducerID: 5, ProducerEpoch: 2}) {
		t.Fatalf("writes %+v, want one transactional batch of producer 5 epoch 2", h.pending)
	}
	bh, err := batch.ParseHeader(BuildBatch(h.pending[0].Records, h.pending[0].Txn, 0))
	if err != nil || !bh.IsTransactional() || bh.ProducerID != 5 || bh.ProducerEpoch != 2 || bh.BaseSequence != 0 {
		t.Fatalf("batch header %+v (%v)", bh, err)
	}
	if len(answered) != 0 {
		t.Fatalf("answered %v before the write committed", answered)
	}
	h.completeAll(nil)
	if len(answered) != 2 || answered[0] != nil || answered[1] != nil {
		t.Fatalf("answered %v", answered)
	}
}
