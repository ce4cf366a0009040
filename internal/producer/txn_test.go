package producer

import (
	"errors"
	"testing"

	"github.com/skein-log/skein/internal/batch"
)

func txnHdr(pid int64, epoch int16, firstSeq, n int32, baseOffset int64) batch.Header {
	h := hdr(pid, epoch, firstSeq, n, baseOffset, 0)
	h.Attributes = batch.TransactionalBit
	return h
}

func TestTransactionOpensAndEnds(t *testing.T) {
	tab := NewTable(10)
	if _, ok := tab.FirstUnstableOffset(); ok {
		t.Fatal("empty table has an open transaction")
	}
	tab.Apply(txnHdr(1, 0, 0, 2, 10))
	tab.Apply(txnHdr(2, 0, 0, 1, 12))
	tab.Apply(txnHdr(1, 0, 2, 1, 13)) // same transaction: the first offset stays
	if first, ok := tab.FirstUnstableOffset(); !ok || first != 10 {
		t.Fatalf("first unstable = %d %v, want 10", first, ok)
	}
	done := tab.ApplyMarker(marker(1, 0, 14, 0), batch.Marker{Commit: false, CoordinatorEpoch: 3})
	if done != (CompletedTxn{ProducerID: 1, FirstOffset: 10, LastOffset: 14, Aborted: true}) {
		t.Fatalf("completed %+v", done)
	}
	if first, _ := tab.FirstUnstableOffset(); first != 12 {
		t.Fatalf("first unstable = %d, want 12 (producer 2)", first)
	}
	e, _ := tab.Lookup(1)
	if e.CurrentTxnFirstOffset != -1 || e.CoordinatorEpoch != 3 {
		t.Fatalf("entry after marker %+v", e)
	}
	// A marker with nothing open ends an empty transaction at itself.
	if done := tab.ApplyMarker(marker(1, 0, 15, 0), batch.Marker{Commit: true, CoordinatorEpoch: 3}); done.FirstOffset != 15 || done.Aborted {
		t.Fatalf("empty transaction %+v", done)
	}
	tab.ApplyMarker(marker(2, 0, 16, 0), batch.Marker{Commit: true, CoordinatorEpoch: 3})
	if _, ok := tab.FirstUnstableOffset(); ok || tab.OngoingTransactions() != 0 {
		t.Fatal("transactions still open")
	}
}

func TestTransactionalChecks(t *testing.T) {
	tab := NewTable(10)
	runSteps(t, tab, []step{
		ok(txnHdr(1, 2, 0, 1, 0)),
		// Kafka's InvalidTxnState: a plain idempotent batch inside the
		// transaction.
		fail(hdr(1, 2, 1, 1, 1, 0), ErrInvalidTxnState),
		// A zombie of an older epoch is fenced.
		fail(txnHdr(1, 1, 0, 1, 1), ErrInvalidProducerEpoch),
		ok(txnHdr(1, 2, 1, 1, 1)),
		// A retry is still a duplicate, whatever the transaction state.
		dup(txnHdr(1, 2, 1, 1, 9), 1, 1),
	})
	if err := tab.CheckMarker(1, 1, 0, false); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("marker of an old epoch: %v", err)
	}
	if err := tab.CheckMarker(1, 2, 5, false); err != nil {
		t.Fatalf("marker: %v", err)
	}
	// A transaction version 2 marker (KIP-1228) is judged as any other.
	if err := tab.CheckMarker(1, 3, 5, true); err != nil {
		t.Fatalf("version 2 marker at the next epoch: %v", err)
	}
	tab.ApplyMarker(marker(1, 2, 2, 0), batch.Marker{CoordinatorEpoch: 5})
	if err := tab.CheckMarker(1, 2, 4, false); !errors.Is(err, ErrCoordinatorFenced) {
		t.Fatalf("marker of an old coordinator: %v", err)
	}
	if err := tab.CheckMarker(99, 0, 0, false); err != nil {
		t.Fatalf("unknown producer: %v", err)
	}
	// After the marker the producer may write outside a transaction.
	runSteps(t, tab, []step{ok(hdr(1, 2, 2, 1, 3, 0))})
}

// A marker that bumps the epoch (an abort after InitProducerId fenced the
// old instance) starts the new epoch's sequences at 0.
func TestMarkerBumpsEpoch(t *testing.T) {
	tab := NewTable(10)
	tab.Apply(txnHdr(1, 0, 0, 3, 0))
	tab.ApplyMarker(marker(1, 1, 3, 0), batch.Marker{CoordinatorEpoch: 0})
	runSteps(t, tab, []step{
		fail(txnHdr(1, 0, 3, 1, 4), ErrInvalidProducerEpoch),
		fail(txnHdr(1, 1, 3, 1, 4), ErrOutOfOrderSequence),
		ok(txnHdr(1, 1, 0, 1, 4)),
	})
}

func TestOpenTransactionNotExpired(t *testing.T) {
	tab := NewTable(10)
	tab.Apply(txnHdr(1, 0, 0, 1, 0))
	tab.Apply(hdr(2, 0, 0, 1, 1, 0))
	if n := tab.ExpireOlderThan(1_000_000, 10); n != 1 {
		t.Fatalf("expired %d, want only the idle producer without a transaction", n)
	}
	if _, ok := tab.Lookup(1); !ok {
		t.Fatal("producer with an open transaction expired")
	}
}

// TestCoordinatorBatchChecksOnlyTheEpoch: the group coordinator's
// transactional offset commits all carry base sequence 0 (as Kafka's); a
// client's batch with that sequence would be a duplicate or out of order,
// a coordinator's is appended, and an older epoch is still fenced.
func TestCoordinatorBatchChecksOnlyTheEpoch(t *testing.T) {
	tab := NewTable(1)
	tab.Apply(txnHdr(1, 2, 0, 3, 10))
	if d, err := tab.Check(txnHdr(1, 2, 0, 3, 0)); err != nil || d.Action != Duplicate {
		t.Fatalf("client check of a repeated sequence: %v %v, want a duplicate", d, err)
	}
	if d, err := tab.CheckCoordinator(txnHdr(1, 2, 0, 3, 0)); err != nil || d.Action != Append {
		t.Fatalf("coordinator check: %v %v, want append", d, err)
	}
	if _, err := tab.CheckCoordinator(txnHdr(1, 1, 0, 1, 0)); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("coordinator check of an older epoch: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	if _, err := tab.CheckCoordinator(txnHdr(2, 0, 0, 1, 0)); !errors.Is(err, ErrTooManyProducers) {
		t.Fatalf("coordinator check of a producer past the limit: %v", err)
	}
}
