package node

import (
	"sync"

	"github.com/skein-log/skein/internal/storage"
)

// pageCacheBudget is the broker's ledger for log.page.cache.broker.bytes
// (storage.CacheLedger, storage.PlanCacheBudget) behind a mutex. A
// partition's flusher notes its fsyncs (noted, after the partition's own
// drop-behind); once the total passes the budget, it wakes the broker's
// budget goroutine (run), which plans and carries out the shrinks
// (storage.Log.DropCacheTo) off every partition's ack path.
type pageCacheBudget struct {
	budget int64
	wake   chan struct{} // capacity 1: a run is due

	mu     sync.Mutex
	ledger storage.CacheLedger[*partition]

	shrinks []storage.KeyedShrink[*partition] // run's scratch (only run uses it)
}

// newPageCacheBudget is the ledger for budget bytes, or nil when there is
// no broker-wide bound (budget 0, or no per-partition window: the budget
// counts only logs with one).
func newPageCacheBudget(budget, window int64) *pageCacheBudget {
	if budget <= 0 || window <= 0 {
		return nil
	}
	return &pageCacheBudget{budget: budget, wake: make(chan struct{}, 1)}
}

// noted records that p was written and fsynced and its drop-behind left
// cached bytes, and wakes run when the partitions together hold more than
// the budget. A nil budget does nothing.
func (c *pageCacheBudget) noted(p *partition, cached int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.ledger.Written(p, cached)
	over := c.ledger.Total() > c.budget
	c.mu.Unlock()
	if over {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// forget drops p from the ledger (its log is closed).
func (c *pageCacheBudget) forget(p *partition) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.ledger.Forget(p)
	c.mu.Unlock()
}

// run carries out budget runs until stop is closed; advised counts what
// each run advised out.
func (c *pageCacheBudget) run(stop <-chan struct{}, advised func(int64)) {
	for {
		select {
		case <-stop:
			return
		case <-c.wake:
			advised(c.shrink())
		}
	}
}

// shrink plans a budget run from the ledger and carries it out, and
// returns how many bytes it advised out. Each shrunk partition's entry
// then takes what its log holds now (a write meanwhile noted its own).
func (c *pageCacheBudget) shrink() (advised int64) {
	c.mu.Lock()
	c.shrinks = c.ledger.Plan(c.budget, c.shrinks[:0])
	c.mu.Unlock()
	for _, s := range c.shrinks {
		advised += s.Key.log.DropCacheTo(s.Keep)
		cached := s.Key.log.CachedBytes()
		c.mu.Lock()
		c.ledger.Shrunk(s.Key, cached)
		c.mu.Unlock()
	}
	clear(c.shrinks) // hold no closed partition
	return advised
}
