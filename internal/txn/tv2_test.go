package txn

import (
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// replayOf is a coordinator rebuilt from every record c wrote.
func replayOf(t *testing.T, recs []Record) *Coordinator {
	t.Helper()
	c := New(DefaultConfig())
	for _, r := range recs {
		if err := c.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func TestEndTxnV2BumpsTheEpochPerTransaction(t *testing.T) {
	c := New(DefaultConfig())
	var log []Record
	keep := func(out Output) Output {
		for _, w := range out.Writes {
			log = append(log, w.Record)
		}
		return out
	}
	res, out := c.InitProducerID(1, newReq("a", 7))
	commit(t, c, 1, keep(out))
	pid, epoch := res.ProducerID, res.Epoch
	for i := range 3 {
		out, err := c.AddPartitionsV2(2, "a", pid, epoch, []TopicPartition{tp0})
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Writes[0].to.ClientTV; got != TV2 {
			t.Fatalf("the implicit add's state has client transaction version %d", got)
		}
		commit(t, c, 2, keep(out))
		commitAll := i != 1
		r, o := c.EndTxnV2(3, EndRequest{TransactionalID: "a", ProducerID: pid, Epoch: epoch, Commit: commitAll, NewProducerID: -1})
		if r.Err != nil || r.ProducerID != pid || r.Epoch != epoch+1 {
			t.Fatalf("end %d: %+v", i, r)
		}
		if p := o.Writes[0].to; p.Epoch != epoch+1 || p.LastEpoch != noEpoch || p.ClientTV != TV2 {
			t.Fatalf("prepared state: %+v", p)
		}
		m := commit(t, c, 3, keep(o))
		if len(m.Markers) != 1 || m.Markers[0].Epoch != epoch+1 || m.Markers[0].Commit != commitAll {
			t.Fatalf("markers %+v, want epoch %d", m.Markers, epoch+1)
		}
		// A retry while the markers are written: the old epoch is one
		// below, so it is a retry (concurrent), not a fenced producer.
		if r, _ := c.EndTxnV2(3, EndRequest{TransactionalID: "a", ProducerID: pid, Epoch: epoch, Commit: commitAll, NewProducerID: -1}); !errors.Is(r.Err, kerr.ConcurrentTransactions) {
			t.Fatalf("retry while prepared: %v", r.Err)
		}
		// The client already holds the new epoch: its next
		// transaction's end (an abort of nothing, as franz-go sends
		// after a rebalance) waits for the completion, not fenced.
		for _, next := range []bool{false, true} {
			if r, _ := c.EndTxnV2(3, EndRequest{TransactionalID: "a", ProducerID: pid, Epoch: epoch + 1, Commit: next, NewProducerID: -1}); !errors.Is(r.Err, kerr.ConcurrentTransactions) {
				t.Fatalf("the next transaction's end (commit %v) while prepared: %v", next, r.Err)
			}
		}
		commit(t, c, 4, keep(c.MarkersWritten(4, m.Markers[0])))
		// A retry after completion gets the new epoch back.
		if r, o := c.EndTxnV2(5, EndRequest{TransactionalID: "a", ProducerID: pid, Epoch: epoch, Commit: commitAll, NewProducerID: -1}); r.Err != nil || r.Epoch != epoch+1 || len(o.Writes) != 0 {
			t.Fatalf("retry after completion: %+v, %d writes", r, len(o.Writes))
		}
		// The old epoch cannot add to the next transaction.
		if _, err := c.AddPartitionsV2(5, "a", pid, epoch, []TopicPartition{tp0}); !errors.Is(err, kerr.ProducerFenced) {
			t.Fatalf("old epoch adds: %v", err)
		}
		epoch++
	}
	d, _ := c.Describe("a")
	if d.Epoch != 3 || d.State != CompleteCommit {
		t.Fatalf("after three transactions: %+v", d)
	}
	// The log replays to the same state.
	r, _ := replayOf(t, log).Describe("a")
	if r.Epoch != d.Epoch || r.State != d.State || r.ClientTV != TV2 || r.ProducerID != d.ProducerID {
		t.Fatalf("replayed %+v, live %+v", r, d)
	}
	// Committing nothing is invalid; aborting nothing bumps the epoch
	// and completes at once (no partition, no marker).
	if r, _ := c.EndTxnV2(6, EndRequest{TransactionalID: "a", ProducerID: pid, Epoch: epoch, Commit: true, NewProducerID: -1}); !errors.Is(r.Err, kerr.InvalidTxnState) {
		t.Fatalf("commit of nothing: %v", r.Err)
	}
	r2, o := c.EndTxnV2(6, EndRequest{TransactionalID: "a", ProducerID: pid, Epoch: epoch, NewProducerID: -1})
	if r2.Err != nil || r2.Epoch != epoch+1 {
		t.Fatalf("abort of nothing: %+v", r2)
	}
	if next := commit(t, c, 6, o); len(next.Markers) != 0 || len(next.Writes) != 1 {
		t.Fatalf("abort of nothing: %+v", next)
	} else {
		commit(t, c, 6, next)
	}
	if d, _ := c.Describe("a"); d.State != CompleteAbort || d.Epoch != epoch+1 {
		t.Fatalf("after the empty abort: %+v", d)
	}
	// A zombie still at an older epoch initializing with it is fenced,
	// not handed the epoch an end gave (KIP-360's retry is of
	// InitProducerId only).
	if res, _ := c.InitProducerID(7, InitRequest{TransactionalID: "a", TimeoutMs: 60_000, ProducerID: pid, Epoch: epoch, NewProducerID: -1}); !errors.Is(res.Err, kerr.ProducerFenced) {
		t.Fatalf("InitProducerId at the epoch before an end: %+v", res)
	}
	// Fenced and foreign producers.
	if r, _ := c.EndTxnV2(7, EndRequest{TransactionalID: "a", ProducerID: pid, Epoch: epoch - 1, NewProducerID: -1}); !errors.Is(r.Err, kerr.ProducerFenced) {
		t.Fatalf("two epochs old: %v", r.Err)
	}
	if r, _ := c.EndTxnV2(7, EndRequest{TransactionalID: "a", ProducerID: pid + 1, Epoch: epoch + 1, NewProducerID: -1}); !errors.Is(r.Err, kerr.InvalidProducerIDMapping) {
		t.Fatalf("another producer id: %v", r.Err)
	}
}

func TestEndTxnV2RotatesAnExhaustedProducerID(t *testing.T) {
	c := New(DefaultConfig())
	mustInit(t, c, 1, newReq("a", 7))
	e := c.txns["a"]
	e.cur.Epoch = math.MaxInt16 - 1
	out, err := c.AddPartitionsV2(2, "a", 7, math.MaxInt16-1, []TopicPartition{tp0})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, c, 2, out)
	req := EndRequest{TransactionalID: "a", ProducerID: 7, Epoch: math.MaxInt16 - 1, Commit: true, NewProducerID: -1}
	if r, _ := c.EndTxnV2(3, req); !errors.Is(r.Err, ErrNeedProducerID) {
		t.Fatalf("exhausted without a new id: %v", r.Err)
	}
	req.NewProducerID = 9
	r, o := c.EndTxnV2(3, req)
	if r.Err != nil || r.ProducerID != 9 || r.Epoch != 0 {
		t.Fatalf("rotation answer: %+v", r)
	}
	rec := o.Writes[0].Record
	m := commit(t, c, 3, o)
	if m.Markers[0].ProducerID != 7 || m.Markers[0].Epoch != math.MaxInt16 {
		t.Fatalf("markers of the rotation: %+v", m.Markers[0])
	}
	_, prepared, err := DecodeRecord(rec)
	if err != nil || prepared.NextProducerID != 9 || prepared.ProducerID != 7 {
		t.Fatalf("prepared record: %+v %v", prepared, err)
	}
	done := c.MarkersWritten(4, m.Markers[0])
	commit(t, c, 4, done)
	d, _ := c.Describe("a")
	if d.ProducerID != 9 || d.Epoch != 0 || d.PrevProducerID != 7 || d.NextProducerID != -1 || d.State != CompleteCommit {
		t.Fatalf("after the rotation: %+v", d)
	}
	// The retry with the old producer id and epoch is recognised.
	req.NewProducerID = -1
	if r, _ := c.EndTxnV2(5, req); r.Err != nil || r.ProducerID != 9 || r.Epoch != 0 {
		t.Fatalf("retry of the rotating end: %+v", r)
	}
	// And the new producer id goes on.
	if _, err := c.AddPartitionsV2(6, "a", 9, 0, []TopicPartition{tp0}); err != nil {
		t.Fatalf("new producer id: %v", err)
	}
}

func TestTV1EndKeepsTheEpoch(t *testing.T) {
	c := New(DefaultConfig())
	r := mustInit(t, c, 1, newReq("a", 7))
	out, _ := c.AddPartitions(2, "a", 7, r.Epoch, []TopicPartition{tp0})
	if out.Writes[0].to.ClientTV != 0 {
		t.Fatal("a version 1 add marks transaction version 2")
	}
	commit(t, c, 2, out)
	out, err := c.EndTxn(3, "a", 7, r.Epoch, true)
	if err != nil {
		t.Fatal(err)
	}
	m := commit(t, c, 3, out)
	if m.Markers[0].Epoch != r.Epoch {
		t.Fatalf("version 1 markers at epoch %d, want %d", m.Markers[0].Epoch, r.Epoch)
	}
	rec := out.Writes[0].Record
	if _, got, _ := DecodeRecord(rec); got.ClientTV != 0 || got.NextProducerID != -1 {
		t.Fatalf("version 1 record: %+v", got)
	}
}

// A zombie at the epoch an InitProducerId bumped from is not taken for a
// retry of a version 2 end (its epoch is one below the current one too):
// it is fenced, and never told the new producer's epoch.
func TestEndTxnV2ZombieAfterInit(t *testing.T) {
	c := New(DefaultConfig())
	mustInit(t, c, 1, newReq("a", 7))       // the zombie, epoch 0
	r := mustInit(t, c, 2, newReq("a", -1)) // its successor, epoch 1
	if r.Epoch != 1 {
		t.Fatalf("successor epoch %d", r.Epoch)
	}
	for _, commit := range []bool{false, true} {
		if res, _ := c.EndTxnV2(3, EndRequest{TransactionalID: "a", ProducerID: 7, Epoch: 0, Commit: commit, NewProducerID: -1}); !errors.Is(res.Err, kerr.ProducerFenced) {
			t.Fatalf("zombie's end (commit %v): %+v", commit, res)
		}
	}
}
