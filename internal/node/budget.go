package node

import (
	"sync"
	"time"
)

// budget is a broker-wide amount (bytes, or requests) shared by every
// connection: queued.max.request.bytes, queued.max.requests and
// fetch.response.max.inflight.bytes. A nil budget is unlimited.
type budget struct {
	mu    sync.Mutex
	limit int64
	used  int64
	// freed is closed (and replaced) whenever something is released, so
	// waiters can also select on their connection going away.
	freed chan struct{}
}

// newBudget returns a budget of limit units; a negative limit is none.
func newBudget(limit int64) *budget {
	if limit < 0 {
		return nil
	}
	return &budget{limit: limit, freed: make(chan struct{})}
}

// acquire takes n units, waiting while they are not there. n is clipped to
// the limit so one oversized claim cannot wait forever (the configuration
// keeps queued.max.request.bytes at least socket.request.max.bytes, so
// this only matters for a mis-sized caller). It returns what was taken, or
// false if stop closed first.
func (b *budget) acquire(n int64, stop <-chan struct{}) (int64, bool) {
	return b.acquireBy(n, stop, nil)
}

// acquireBy is acquire that also gives up when timeout fires (nil: never).
func (b *budget) acquireBy(n int64, stop <-chan struct{}, timeout <-chan time.Time) (int64, bool) {
	if b == nil {
		return n, true
	}
	n = min(n, b.limit)
	for {
		b.mu.Lock()
		if b.used+n <= b.limit {
			b.used += n
			b.mu.Unlock()
			return n, true
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-stop:
			return 0, false
		case <-timeout:
			return 0, false
		}
	}
}

// take grants up to n units at once without waiting: what is left, which
// may be 0.
func (b *budget) take(n int64) int64 {
	if b == nil {
		return n
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n = max(min(n, b.limit-b.used), 0)
	b.used += n
	return n
}

// force takes n units whatever is left, going over the limit if need be:
// for memory already allocated, which the budget must count so that later
// claims get less.
func (b *budget) force(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
}

// release returns n units.
func (b *budget) release(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if b.used < 0 {
		panic("node: budget released more than it granted")
	}
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// inUse is what is taken now.
func (b *budget) inUse() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
