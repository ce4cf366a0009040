package node

import (
	"sync"

	"github.com/skein-log/skein/internal/storage"
)

// pageCacheBudget is the broker's ledger for log.page.cache.broker.bytes
// (storage.PlanCacheBudget): each partition's cached durable bytes as its
// last drop left them (storage.Log.CachedBytes) and the order of their
// writes. A partition's flusher notes its fsyncs (noted, after the
// partition's own drop-behind); once the total passes the budget, it wakes
// the broker's budget goroutine (run), which plans and carries out the
// shrinks (storage.Log.DropCacheTo) off every partition's ack path.
type pageCacheBudget struct {
	budget int64
	wake   chan struct{} // capacity 1: a run is due

	mu      sync.Mutex
	seq     uint64 // the last write's sequence number
	total   int64  // sum of entries' cached
	entries map[*partition]*cacheEntry

	// run's scratch (only run uses them).
	parts   []*partition
	uses    []storage.CacheUse
	order   []int
	shrinks []storage.CacheShrink
}

type cacheEntry struct {
	cached int64
	seq    uint64
}

// newPageCacheBudget is the ledger for budget bytes, or nil when there is
// no broker-wide bound (budget 0, or no per-partition window: the budget
// counts only logs with one).
func newPageCacheBudget(budget, window int64) *pageCacheBudget {
	if budget <= 0 || window <= 0 {
		return nil
	}
	return &pageCacheBudget{budget: budget, wake: make(chan struct{}, 1), entries: map[*partition]*cacheEntry{}}
}

// noted records that p was written and fsynced and its drop-behind left
// cached bytes, and wakes run when the partitions together hold more than
// the budget. A nil budget does nothing.
func (c *pageCacheBudget) noted(p *partition, cached int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.seq++
	c.setLocked(p, cached, c.seq)
	over := c.total > c.budget
	c.mu.Unlock()
	if over {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// setLocked makes p's entry cached bytes written at seq (0: keep the
// entry's); a partition with nothing cached has no entry (a closed log
// reports nothing cached, so it leaves the ledger at its next note).
func (c *pageCacheBudget) setLocked(p *partition, cached int64, seq uint64) {
	e := c.entries[p]
	if e != nil {
		c.total -= e.cached
	}
	switch {
	case cached <= 0:
		delete(c.entries, p)
		return
	case e == nil:
		e = &cacheEntry{}
		c.entries[p] = e
	}
	c.total += cached
	e.cached = cached
	if seq != 0 {
		e.seq = seq
	}
}

// forget drops p from the ledger (its log is closed).
func (c *pageCacheBudget) forget(p *partition) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.setLocked(p, 0, 0)
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
	c.parts, c.uses = c.parts[:0], c.uses[:0]
	for p, e := range c.entries {
		c.parts = append(c.parts, p)
		c.uses = append(c.uses, storage.CacheUse{Cached: e.cached, Seq: e.seq})
	}
	c.shrinks, c.order = storage.PlanCacheBudget(c.uses, c.budget, c.order, c.shrinks[:0])
	c.mu.Unlock()
	for _, s := range c.shrinks {
		p := c.parts[s.Index]
		advised += p.log.DropCacheTo(s.Keep)
		cached := p.log.CachedBytes()
		c.mu.Lock()
		if c.entries[p] != nil { // not forgotten meanwhile
			c.setLocked(p, cached, 0)
		}
		c.mu.Unlock()
	}
	clear(c.parts) // hold no closed partition
	return advised
}
