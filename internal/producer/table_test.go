package producer

import (
	"errors"
	"math"
	"testing"

	"github.com/skein-log/skein/internal/batch"
)

// hdr builds the header of an idempotent data batch of n records.
func hdr(pid int64, epoch int16, firstSeq, n int32, baseOffset, maxTs int64) batch.Header {
	return batch.Header{
		BaseOffset:      baseOffset,
		Magic:           2,
		LastOffsetDelta: n - 1,
		RecordCount:     n,
		MaxTimestamp:    maxTs,
		ProducerID:      pid,
		ProducerEpoch:   epoch,
		BaseSequence:    firstSeq,
	}
}

func marker(pid int64, epoch int16, offset, ts int64) batch.Header {
	h := hdr(pid, epoch, batch.NoSequence, 1, offset, ts)
	h.Attributes = batch.ControlBit | batch.TransactionalBit
	return h
}

// step sends one batch through Check and, when the answer is Append,
// Update. wantErr nil means success; wantOrig is checked for Duplicate.
type step struct {
	h          batch.Header
	wantAction Action
	wantErr    error
	wantOrig   BatchMetadata
}

func ok(h batch.Header) step { return step{h: h, wantAction: Append} }
func dup(h batch.Header, base, last int64) step {
	return step{h: h, wantAction: Duplicate, wantOrig: BatchMetadata{
		FirstSeq: h.BaseSequence, LastSeq: h.LastSequence(), BaseOffset: base, LastOffset: last, MaxTimestamp: h.MaxTimestamp,
	}}
}
func fail(h batch.Header, err error) step { return step{h: h, wantErr: err} }

func runSteps(t *testing.T, tab *Table, steps []step) {
	t.Helper()
	for i, s := range steps {
		before := tab.Entries()
		d, err := tab.Check(s.h)
		if s.wantErr != nil {
			if !errors.Is(err, s.wantErr) {
				t.Fatalf("step %d: Check error = %v, want %v", i, err, s.wantErr)
			}
		} else if err != nil {
			t.Fatalf("step %d: Check error = %v", i, err)
		} else if d.Action != s.wantAction {
			t.Fatalf("step %d: action = %v, want %v", i, d.Action, s.wantAction)
		} else if d.Action == Duplicate && d.Original != s.wantOrig {
			t.Fatalf("step %d: original = %+v, want %+v", i, d.Original, s.wantOrig)
		}
		if !equalEntries(before, tab.Entries()) {
			t.Fatalf("step %d: Check changed the table", i)
		}
		if err == nil && d.Action == Append {
			tab.Update(s.h)
		}
	}
}

func equalEntries(a, b []Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.ProducerID != y.ProducerID || x.Epoch != y.Epoch || x.LastTimestamp != y.LastTimestamp || len(x.Batches) != len(y.Batches) {
			return false
		}
		for j := range x.Batches {
			if x.Batches[j] != y.Batches[j] {
				return false
			}
		}
	}
	return true
}

func TestCheckScenarios(t *testing.T) {
	const pid = 7
	// six in-order batches of 2 records each at offsets 100, 102, ...
	six := make([]step, 6)
	for i := range six {
		six[i] = ok(hdr(pid, 0, int32(2*i), 2, int64(100+2*i), int64(1000+i)))
	}
	dupOf := func(i int) step {
		return dup(hdr(pid, 0, int32(2*i), 2, -1, int64(1000+i)), int64(100+2*i), int64(101+2*i))
	}
	const maxSeq = math.MaxInt32

	tests := []struct {
		name  string
		steps []step
	}{
		{"non-idempotent passes through", []step{
			ok(hdr(batch.NoProducerID, -1, batch.NoSequence, 3, 0, 0)),
			ok(hdr(batch.NoProducerID, -1, batch.NoSequence, 3, 3, 0)),
		}},
		{"in order", six},
		{"duplicate of each of the last 5", append(append([]step{}, six...),
			dupOf(1), dupOf(2), dupOf(3), dupOf(4), dupOf(5))},
		{"duplicate older than the window is out of order", append(append([]step{}, six...),
			fail(hdr(pid, 0, 0, 2, -1, 0), ErrOutOfOrderSequence))},
		{"duplicate within the window of only 1 batch", []step{
			ok(hdr(pid, 0, 0, 3, 10, 5)),
			dup(hdr(pid, 0, 0, 3, -1, 5), 10, 12),
			ok(hdr(pid, 0, 3, 1, 13, 6)),
		}},
		{"gap", []step{
			ok(hdr(pid, 0, 0, 2, 0, 0)),
			fail(hdr(pid, 0, 3, 1, -1, 0), ErrOutOfOrderSequence),
			ok(hdr(pid, 0, 2, 1, 2, 0)),
		}},
		{"overlapping range that is not a retry", []step{
			ok(hdr(pid, 0, 0, 4, 0, 0)),
			fail(hdr(pid, 0, 0, 2, -1, 0), ErrOutOfOrderSequence),
			fail(hdr(pid, 0, 2, 4, -1, 0), ErrOutOfOrderSequence),
		}},
		{"epoch bump restarts at 0", []step{
			ok(hdr(pid, 0, 0, 5, 0, 0)),
			ok(hdr(pid, 1, 0, 2, 5, 0)),
			ok(hdr(pid, 1, 2, 2, 7, 0)),
			dup(hdr(pid, 1, 0, 2, -1, 0), 5, 6),
		}},
		{"epoch bump not at 0", []step{
			ok(hdr(pid, 0, 0, 5, 0, 0)),
			fail(hdr(pid, 1, 5, 1, -1, 0), ErrOutOfOrderSequence),
		}},
		{"fenced epoch", []step{
			ok(hdr(pid, 3, 0, 1, 0, 0)),
			fail(hdr(pid, 2, 1, 1, -1, 0), ErrInvalidProducerEpoch),
			// even a retry of a batch from the old epoch is fenced
			fail(hdr(pid, 2, 0, 1, -1, 0), ErrInvalidProducerEpoch),
		}},
		{"retry from before an epoch bump is fenced", []step{
			ok(hdr(pid, 0, 0, 1, 0, 0)),
			ok(hdr(pid, 1, 0, 1, 1, 0)),
			fail(hdr(pid, 0, 0, 1, -1, 0), ErrInvalidProducerEpoch),
		}},
		{"sequence wraps at int32 max", []step{
			ok(hdr(pid, 0, maxSeq-1, 2, 0, 0)), // last seq = max
			ok(hdr(pid, 0, 0, 1, 2, 0)),
			ok(hdr(pid, 0, 1, 1, 3, 0)),
		}},
		{"batch spanning the wrap", []step{
			ok(hdr(pid, 0, maxSeq-1, 4, 0, 0)), // seqs max-1, max, 0, 1
			dup(hdr(pid, 0, maxSeq-1, 4, -1, 0), 0, 3),
			fail(hdr(pid, 0, 0, 1, -1, 0), ErrOutOfOrderSequence),
			ok(hdr(pid, 0, 2, 1, 4, 0)),
		}},
		{"after wrap, max+1 is not accepted as a plain increment", []step{
			ok(hdr(pid, 0, maxSeq, 1, 0, 0)),
			fail(hdr(pid, 0, 1, 1, -1, 0), ErrOutOfOrderSequence),
		}},
		{"unknown producer accepted at any sequence (KIP-360)", []step{
			ok(hdr(pid, 4, 1234, 2, 50, 0)),
			ok(hdr(pid, 4, 1236, 1, 52, 0)),
			fail(hdr(pid, 4, 1240, 1, -1, 0), ErrOutOfOrderSequence),
		}},
		{"idempotent batch without a sequence", []step{
			fail(hdr(pid, 0, batch.NoSequence, 1, -1, 0), ErrOutOfOrderSequence),
			ok(hdr(pid, 0, 0, 1, 0, 0)),
			fail(hdr(pid, 0, batch.NoSequence, 1, -1, 0), ErrOutOfOrderSequence),
		}},
		{"markers are fenced but carry no sequence", []step{
			ok(hdr(pid, 0, 0, 2, 0, 0)),
			ok(marker(pid, 0, 2, 0)),
			ok(hdr(pid, 0, 2, 1, 3, 0)), // marker did not disturb the sequence
			ok(marker(pid, 1, 4, 0)),    // coordinator bumped the epoch
			fail(hdr(pid, 0, 3, 1, -1, 0), ErrInvalidProducerEpoch),
			fail(hdr(pid, 1, 3, 1, -1, 0), ErrOutOfOrderSequence), // new epoch starts at 0
			ok(hdr(pid, 1, 0, 1, 5, 0)),
			fail(marker(pid, 0, -1, 0), ErrInvalidProducerEpoch),
		}},
		{"producers are independent", []step{
			ok(hdr(1, 0, 0, 1, 0, 0)),
			ok(hdr(2, 0, 0, 1, 1, 0)),
			ok(hdr(1, 0, 1, 1, 2, 0)),
			dup(hdr(2, 0, 0, 1, -1, 0), 1, 1),
			fail(hdr(2, 0, 2, 1, -1, 0), ErrOutOfOrderSequence),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runSteps(t, NewTable(100), tc.steps)
		})
	}
}

func TestWindowKeepsLastFive(t *testing.T) {
	tab := NewTable(10)
	for i := range 8 {
		tab.Update(hdr(1, 0, int32(i), 1, int64(i), int64(i)))
	}
	e, found := tab.Lookup(1)
	if !found {
		t.Fatal("producer 1 missing")
	}
	if len(e.Batches) != WindowSize {
		t.Fatalf("window holds %d batches, want %d", len(e.Batches), WindowSize)
	}
	for i, b := range e.Batches {
		if want := int32(i + 3); b.FirstSeq != want || b.BaseOffset != int64(want) {
			t.Fatalf("batch %d = %+v, want first seq and offset %d", i, b, want)
		}
	}
	// Lookup returns a copy.
	e.Batches[0].FirstSeq = 99
	if again, _ := tab.Lookup(1); again.Batches[0].FirstSeq != 3 {
		t.Fatal("Lookup exposed internal state")
	}
}

func TestTooManyProducers(t *testing.T) {
	tab := NewTable(2)
	runSteps(t, tab, []step{
		ok(hdr(1, 0, 0, 1, 0, 0)),
		ok(hdr(2, 0, 0, 1, 1, 0)),
		fail(hdr(3, 0, 0, 1, -1, 0), ErrTooManyProducers),
		ok(hdr(1, 0, 1, 1, 2, 0)), // known producers still served
		ok(hdr(batch.NoProducerID, -1, batch.NoSequence, 1, 3, 0)),
	})
	// Rebuild must never lose state, so Apply ignores the limit.
	tab.Apply(hdr(3, 0, 0, 1, 4, 0))
	if tab.Len() != 3 {
		t.Fatalf("Len = %d after Apply past the limit, want 3", tab.Len())
	}
	if _, err := tab.Check(hdr(4, 0, 0, 1, -1, 0)); !errors.Is(err, ErrTooManyProducers) {
		t.Fatalf("Check new producer over the limit: %v", err)
	}
}

func TestExpireOlderThan(t *testing.T) {
	tab := NewTable(10)
	tab.Update(hdr(1, 0, 0, 1, 0, 1_000))
	tab.Update(hdr(2, 0, 0, 1, 1, 5_000))
	tab.Update(hdr(1, 0, 1, 1, 2, 2_000)) // the last batch counts, not the first
	tab.Update(marker(3, 0, 3, 3_000))

	tests := []struct {
		now         int64
		wantRemoved int
		wantLeft    []int64
	}{
		{now: 2_999, wantRemoved: 0, wantLeft: []int64{1, 2, 3}},
		{now: 3_000, wantRemoved: 1, wantLeft: []int64{2, 3}}, // exactly retention old: expired
		{now: 4_000, wantRemoved: 1, wantLeft: []int64{2}},
		{now: 5_999, wantRemoved: 0, wantLeft: []int64{2}},
		{now: 6_000, wantRemoved: 1, wantLeft: nil},
	}
	for _, tc := range tests {
		if got := tab.ExpireOlderThan(tc.now, 1_000); got != tc.wantRemoved {
			t.Fatalf("now %d: removed %d, want %d", tc.now, got, tc.wantRemoved)
		}
		var left []int64
		for _, e := range tab.Entries() {
			left = append(left, e.ProducerID)
		}
		if len(left) != len(tc.wantLeft) {
			t.Fatalf("now %d: left %v, want %v", tc.now, left, tc.wantLeft)
		}
		for i := range left {
			if left[i] != tc.wantLeft[i] {
				t.Fatalf("now %d: left %v, want %v", tc.now, left, tc.wantLeft)
			}
		}
	}
	// An expired producer is unknown again: any sequence is accepted.
	if d, err := tab.Check(hdr(1, 0, 77, 1, -1, 0)); err != nil || d.Action != Append {
		t.Fatalf("expired producer: %v %v", d, err)
	}
}

func TestNewTableClampsLimit(t *testing.T) {
	tab := NewTable(0)
	runSteps(t, tab, []step{
		ok(hdr(1, 0, 0, 1, 0, 0)),
		fail(hdr(2, 0, 0, 1, -1, 0), ErrTooManyProducers),
	})
}
