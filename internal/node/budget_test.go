package node

import (
	"testing"
	"time"
)

func TestBudget(t *testing.T) {
	b := newBudget(10)
	if got, ok := b.acquire(6, nil); !ok || got != 6 {
		t.Fatalf("acquire 6: %d %v", got, ok)
	}
	if got := b.take(8); got != 4 {
		t.Fatalf("take 8 of the 4 left: %d", got)
	}
	if got := b.take(1); got != 0 {
		t.Fatalf("take from a spent budget: %d", got)
	}
	b.force(3) // memory already held is counted even over the limit
	if b.inUse() != 13 {
		t.Fatalf("in use %d, want 13", b.inUse())
	}
	// A waiter gives up at its deadline...
	expired := make(chan time.Time, 1)
	expired <- time.Time{}
	if _, ok := b.acquireBy(1, nil, expired); ok {
		t.Fatal("acquired from a spent budget")
	}
	// ...and is woken by a release that makes room.
	got := make(chan int64)
	go func() {
		n, _ := b.acquire(5, nil)
		got <- n
	}()
	b.release(7) // 6 left in use: room for 5? no (11 > 10)
	b.release(3) // 3 in use: room
	if n := <-got; n != 5 || b.inUse() != 8 {
		t.Fatalf("woken waiter got %d, in use %d", n, b.inUse())
	}
	// A claim larger than the whole budget is clipped rather than waiting forever.
	b.release(8)
	if n, ok := b.acquire(50, nil); !ok || n != 10 {
		t.Fatalf("oversized claim: %d %v", n, ok)
	}
	var unlimited *budget
	if n, ok := unlimited.acquire(1<<40, nil); !ok || n != 1<<40 || unlimited.take(5) != 5 {
		t.Fatal("a nil budget limits nothing")
	}
}
