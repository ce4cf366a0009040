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
