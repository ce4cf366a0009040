package producer

import (
	"errors"
	"math"
	"testing"
)

func TestIDAllocatorProtocol(t *testing.T) {
	a, err := NewIDAllocator(0, 3)
	if err != nil {
		t.Fatal(err)
	}
	var persistedEnd int64
	var got []int64
	for range 7 {
		id, ok := a.Next()
		if !ok {
			b, err := a.NextBlock()
			if err != nil {
				t.Fatal(err)
			}
			persistedEnd = b.End
			if err := a.Grant(b); err != nil {
				t.Fatal(err)
			}
			id, ok = a.Next()
			if !ok {
				t.Fatal("no id after a grant")
			}
		}
		got = append(got, id)
	}
	for i, id := range got {
		if id != int64(i) {
			t.Fatalf("ids = %v, want 0..6", got)
		}
	}
	if persistedEnd != 9 || a.Remaining() != 2 {
		t.Fatalf("persisted end %d remaining %d, want 9 and 2", persistedEnd, a.Remaining())
	}

	// A restart from the persisted end never reuses an id.
	restarted, err := NewIDAllocator(persistedEnd, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := restarted.Next(); ok {
		t.Fatal("restarted allocator handed out an id before a grant")
	}
	b, _ := restarted.NextBlock()
	if b != (IDBlock{Start: 9, End: 12}) {
		t.Fatalf("block after restart = %+v", b)
	}
}

func TestIDAllocatorErrors(t *testing.T) {
	if _, err := NewIDAllocator(-1, 10); err == nil {
		t.Error("negative persisted end accepted")
	}
	if _, err := NewIDAllocator(0, 0); err == nil {
		t.Error("zero block size accepted")
	}
	a, _ := NewIDAllocator(10, 5)
	for _, b := range []IDBlock{{Start: 11, End: 16}, {Start: 10, End: 10}, {Start: 10, End: 9}} {
		if err := a.Grant(b); err == nil {
			t.Errorf("Grant(%+v) accepted", b)
		}
	}
	// NextBlock does not change the allocator: proposing twice is harmless.
	b1, _ := a.NextBlock()
	b2, _ := a.NextBlock()
	if b1 != b2 {
		t.Fatalf("NextBlock not idempotent: %+v %+v", b1, b2)
	}
	// Granting the proposal twice fails the second time (it is stale).
	if err := a.Grant(b1); err != nil {
		t.Fatal(err)
	}
	if err := a.Grant(b1); err == nil {
		t.Fatal("stale block granted twice")
	}

	full, _ := NewIDAllocator(math.MaxInt64-4, 5)
	if _, err := full.NextBlock(); !errors.Is(err, ErrIDsExhausted) {
		t.Fatalf("NextBlock at the top: %v", err)
	}
	edge, _ := NewIDAllocator(math.MaxInt64-5, 5)
	if b, err := edge.NextBlock(); err != nil || b.End != math.MaxInt64 {
		t.Fatalf("last block: %+v %v", b, err)
	}
}
