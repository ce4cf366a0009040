package producer

import (
	"errors"
	"testing"

	"github.com/skein-log/skein/internal/batch"
)

// KIP-890 part 1's verification guards: a transactional batch that would
// open a transaction is appended only with the guard StartVerification
// handed out, and only while no marker or transactional append has
// ended that verification.
func TestVerificationGuards(t *testing.T) {
	tab := NewTable(10)
	g, need, err := tab.StartVerification(1, 0, false, 100)
	if err != nil || !need || g == NoGuard {
		t.Fatalf("start: guard %d need %v err %v", g, need, err)
	}
	// A retry joins the verification under way.
	if g2, _, _ := tab.StartVerification(1, 0, false, 200); g2 != g {
		t.Fatalf("retry got guard %d, want %d", g2, g)
	}
	first := txnHdr(1, 0, 0, 1, 0)
	for _, bad := range []uint64{NoGuard, g + 1} {
		if _, err := tab.CheckVerified(first, bad); !errors.Is(err, ErrNotVerified) {
			t.Fatalf("guard %d: %v, want ErrNotVerified", bad, err)
		}
	}
	// Check (verification off) does not look at guards.
	if _, err := tab.Check(first); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.CheckVerified(first, g); err != nil {
		t.Fatalf("verified batch: %v", err)
	}
	tab.Update(first)
	if tab.Verifications() != 0 {
		t.Fatal("the transactional append did not end the verification")
	}
	// Open now: nothing to verify, and any guard passes.
	if _, need, _ := tab.StartVerification(1, 0, false, 300); need {
		t.Fatal("an open transaction needs verification")
	}
	if _, err := tab.CheckVerified(txnHdr(1, 0, 1, 1, 1), NoGuard); err != nil {
		t.Fatalf("batch of the open transaction: %v", err)
	}
	tab.Update(txnHdr(1, 0, 1, 1, 1))
	// A retry of a batch already written is a duplicate before the
	// verification is judged.
	tab.ApplyMarker(marker(1, 0, 2, 0), batch.Marker{Commit: true})
	if d, err := tab.CheckVerified(txnHdr(1, 0, 1, 1, 9), NoGuard); err != nil || d.Action != Duplicate {
		t.Fatalf("retry after the marker: %+v %v", d, err)
	}
	// Non-transactional batches never need a guard.
	if _, err := tab.CheckVerified(hdr(1, 0, 2, 1, 3, 0), NoGuard); err != nil {
		t.Fatalf("idempotent batch: %v", err)
	}
}

// The race KAFKA-14884 closes: the coordinator confirmed the partition,
// then ended the transaction (its marker lands here) before the append.
func TestMarkerVoidsVerification(t *testing.T) {
	tab := NewTable(10)
	tab.Apply(txnHdr(1, 0, 0, 1, 0))
	tab.ApplyMarker(marker(1, 0, 1, 0), batch.Marker{Commit: true})
	g, need, _ := tab.StartVerification(1, 0, false, 0)
	if !need {
		t.Fatal("no transaction open after the marker, verification needed")
	}
	tab.ApplyMarker(marker(1, 1, 2, 0), batch.Marker{Commit: false}) // an abort with a bumped epoch
	if _, err := tab.CheckVerified(txnHdr(1, 1, 0, 1, 3), g); !errors.Is(err, ErrNotVerified) {
		t.Fatalf("batch verified before the marker: %v, want ErrNotVerified", err)
	}
	// Fencing is judged first (KAFKA-19690): an older epoch is
	// INVALID_PRODUCER_EPOCH, not a verification failure.
	if _, err := tab.CheckVerified(txnHdr(1, 0, 2, 1, 3), g); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("fenced batch: %v", err)
	}
}

// Verifications are bounded by the table's size, expire like idle
// producers (from their start: a retry does not renew them) and are
// forgotten when leadership changes.
func TestVerificationLimits(t *testing.T) {
	tab := NewTable(2)
	tab.StartVerification(1, 0, false, 0)
	tab.StartVerification(2, 0, false, 50)
	if _, _, err := tab.StartVerification(3, 0, false, 60); !errors.Is(err, ErrTooManyProducers) {
		t.Fatalf("over the limit: %v", err)
	}
	tab.StartVerification(1, 0, false, 90) // a retry: keeps its start
	tab.ExpireOlderThan(100, 100)
	if tab.Verifications() != 1 {
		t.Fatalf("%d verifications after expiry, want 1", tab.Verifications())
	}
	tab.ClearVerifications()
	if tab.Verifications() != 0 {
		t.Fatal("cleared verifications remain")
	}
}

// Transaction version 2 (KIP-890 part 2): the first batch of the next
// transaction comes at the next epoch, possibly before the marker (of
// that same epoch) ends the previous one here. It is verified (added)
// although a transaction is open, and that marker does not void it; a
// version 1 verification is voided by it, as before.
func TestVerificationAtTheNextEpoch(t *testing.T) {
	for _, tv2 := range []bool{true, false} {
		tab := NewTable(10)
		tab.Update(txnHdr(1, 0, 0, 1, 0)) // the transaction at epoch 0, open
		if _, need, _ := tab.StartVerification(1, 0, tv2, 0); need {
			t.Fatal("the open transaction's own epoch needs verification")
		}
		g, need, err := tab.StartVerification(1, 1, tv2, 0)
		if err != nil || !need {
			t.Fatalf("next epoch while the previous transaction is open: need %v, %v", need, err)
		}
		next := txnHdr(1, 1, 0, 1, 1)
		if _, err := tab.CheckVerified(next, NoGuard); !errors.Is(err, ErrNotVerified) {
			t.Fatalf("next epoch without a guard joins the open transaction: %v", err)
		}
		tab.ApplyMarker(marker(1, 1, 1, 0), batch.Marker{Commit: true})
		_, err = tab.CheckVerified(txnHdr(1, 1, 0, 1, 2), g)
		switch {
		case tv2 && err != nil:
			t.Fatalf("version 2: the marker ending the previous transaction voided the verification: %v", err)
		case !tv2 && !errors.Is(err, ErrNotVerified):
			t.Fatalf("version 1: the marker did not void the verification: %v", err)
		}
		// A marker of a newer epoch than the verification's voids it.
		if tv2 {
			g, _, _ = tab.StartVerification(1, 1, true, 0)
			tab.ApplyMarker(marker(1, 2, 3, 0), batch.Marker{Commit: false})
			if _, err := tab.CheckVerified(txnHdr(1, 2, 0, 1, 4), g); !errors.Is(err, ErrNotVerified) {
				t.Fatalf("a newer marker: %v", err)
			}
		}
	}
}
