package sim

import "github.com/skein-log/skein/internal/storage"

// simPageCacheBudget is the process's broker-wide page-cache budget
// (log.page.cache.broker.bytes): a few replicas' windows, so that a node
// holding more replicas than that shrinks those written least recently
// (storage.PlanCacheBudget, Log.DropCacheTo) across crashes, truncations,
// moves and closes; Mem breaks under -tags invariants at advice over
// unsynced bytes. Advice changes nothing Mem serves, and the ledger draws
// no randomness, so no trace depends on it.
const simPageCacheBudget = 3 * simPageCacheWindow

// pageCacheLedger is one process's storage.CacheLedger, run inline after
// the replica's own drop (the simulation has one goroutine), as node's
// pageCacheBudget runs it behind a mutex.
type pageCacheLedger struct {
	ledger  storage.CacheLedger[*replica]
	shrinks []storage.KeyedShrink[*replica]
}

// noteCache records that r was written and fsynced and carries out a
// budget run when the replicas together hold more than the budget.
func (p *process) noteCache(r *replica) {
	c := &p.pageCache
	c.ledger.Written(r, r.log.CachedBytes())
	c.shrinks = c.ledger.Plan(simPageCacheBudget, c.shrinks[:0])
	for _, s := range c.shrinks {
		s.Key.log.DropCacheTo(s.Keep)
	}
	for _, s := range c.shrinks {
		c.ledger.Shrunk(s.Key, s.Key.log.CachedBytes())
	}
	clear(c.shrinks) // hold no closed replica
}

// forgetCache drops r from the ledger (its log is closed).
func (p *process) forgetCache(r *replica) { p.pageCache.ledger.Forget(r) }
