package storage

import (
	"cmp"
	"slices"
)

// A broker-wide page-cache budget (log.page.cache.broker.bytes): each log
// keeps at most its own window of durable data cached (DropCache), and the
// broker bounds the total over its logs, advising out first the cache of
// the logs written least recently. Without it every partition a broker
// ever wrote keeps its newest window cached once it goes idle, so the page
// cache grows with each new topic and the writes fault in fresh pages
// instead of reusing freed ones (docs/performance.md).
//
// PlanCacheBudget is the decision, pure; the node and the simulator keep
// the ledger (each log's CachedBytes and the order of their writes) and
// carry out its shrinks with Log.DropCacheTo.

// CacheUse is one log's entry in the budget: Cached is its durable bytes
// still in the page cache (Log.CachedBytes), Seq when it was last written,
// as a sequence number (larger: later), not a clock.
type CacheUse struct {
	Cached int64
	Seq    uint64
}

// CacheShrink says: drop log Index's cache down to its newest Keep bytes
// (Log.DropCacheTo).
type CacheShrink struct {
	Index int
	Keep  int64
}

// CacheBudgetLow is what a budget run brings the total down to: a quarter
// below the budget, so the next run waits until the logs have written
// another quarter of it (hysteresis: not a run at every fsync).
func CacheBudgetLow(budget int64) int64 { return budget - budget/4 }

// PlanCacheBudget decides which logs to shrink, and to what, when the
// total of uses' Cached exceeds budget (≤ 0: no bound, nothing to do):
// from the log written least recently on (lowest Seq; ties by index), each
// gives up its cache, the last one only the part needed, until the total
// is at most CacheBudgetLow(budget). The log written last is shrunk only
// when the others together cannot make room (a budget below one window).
// order is scratch (its capacity is reused). It appends the shrinks to dst
// and returns them, and the order slice for the next call.
func PlanCacheBudget(uses []CacheUse, budget int64, order []int, dst []CacheShrink) ([]CacheShrink, []int) {
	if budget <= 0 {
		return dst, order
	}
	var total int64
	for _, u := range uses {
		total += u.Cached
	}
	if total <= budget {
		return dst, order
	}
	order = order[:0]
	for i, u := range uses {
		if u.Cached > 0 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(uses[a].Seq, uses[b].Seq), cmp.Compare(a, b))
	})
	need := total - CacheBudgetLow(budget)
	for _, i := range order {
		if need <= 0 {
			break
		}
		c := uses[i].Cached
		give := min(c, need)
		dst = append(dst, CacheShrink{Index: i, Keep: c - give})
		need -= give
	}
	return dst, order
}

// CacheLedger is the ledger PlanCacheBudget reads, for logs named by keys
// of type K: each log's cached bytes as its last drop left them
// (Log.CachedBytes) and the order of their writes. It holds no lock: the
// node guards it with a mutex, the simulator runs it on its one
// goroutine. A log with nothing cached has no entry. The zero value is
// an empty ledger.
type CacheLedger[K comparable] struct {
	seq   uint64 // the last write's sequence number
	total int64  // sum of uses' Cached
	keys  []K
	uses  []CacheUse
	index map[K]int // position in keys and uses

	order   []int         // PlanCacheBudget's scratch
	shrinks []CacheShrink // PlanCacheBudget's scratch
}

// KeyedShrink is a CacheShrink of the log named Key.
type KeyedShrink[K comparable] struct {
	Key  K
	Keep int64
}

// Written notes that k's log was written and fsynced and its drop left
// cached bytes cached, as the ledger's latest write.
func (c *CacheLedger[K]) Written(k K, cached int64) {
	c.seq++
	c.set(k, cached, c.seq)
}

// Shrunk notes what k's log holds after a budget run shrank it, keeping
// its place in the order of writes; a key forgotten meanwhile stays out.
func (c *CacheLedger[K]) Shrunk(k K, cached int64) {
	if _, ok := c.index[k]; ok {
		c.set(k, cached, 0)
	}
}

// Forget drops k (its log is closed).
func (c *CacheLedger[K]) Forget(k K) { c.set(k, 0, 0) }

// Total is the ledger's cached bytes over all its logs.
func (c *CacheLedger[K]) Total() int64 { return c.total }

// Cached is k's cached bytes as noted, and whether k has an entry.
func (c *CacheLedger[K]) Cached(k K) (int64, bool) {
	i, ok := c.index[k]
	if !ok {
		return 0, false
	}
	return c.uses[i].Cached, true
}

// Plan is PlanCacheBudget over the ledger: the shrinks a budget run
// carries out (Log.DropCacheTo, then Shrunk with what the log holds),
// appended to dst.
func (c *CacheLedger[K]) Plan(budget int64, dst []KeyedShrink[K]) []KeyedShrink[K] {
	c.shrinks, c.order = PlanCacheBudget(c.uses, budget, c.order, c.shrinks[:0])
	for _, s := range c.shrinks {
		dst = append(dst, KeyedShrink[K]{Key: c.keys[s.Index], Keep: s.Keep})
	}
	return dst
}

// set makes k's entry cached bytes written at seq (0: keep the entry's);
// cached ≤ 0 removes it (the last entry takes its place: the order of
// writes is in the sequence numbers, not the positions).
func (c *CacheLedger[K]) set(k K, cached int64, seq uint64) {
	i, ok := c.index[k]
	if ok {
		c.total -= c.uses[i].Cached
	}
	if cached <= 0 {
		if ok {
			last := len(c.keys) - 1
			c.keys[i], c.uses[i] = c.keys[last], c.uses[last]
			c.index[c.keys[i]] = i
			var zero K
			c.keys[last] = zero // hold no closed log
			c.keys, c.uses = c.keys[:last], c.uses[:last]
			delete(c.index, k)
		}
		return
	}
	if !ok {
		if c.index == nil {
			c.index = map[K]int{}
		}
		i = len(c.keys)
		c.index[k] = i
		c.keys = append(c.keys, k)
		c.uses = append(c.uses, CacheUse{})
	}
	c.total += cached
	c.uses[i].Cached = cached
	if seq != 0 {
		c.uses[i].Seq = seq
	}
}
