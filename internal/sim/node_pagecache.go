package sim

import (
	"slices"

	"github.com/skein-log/skein/internal/storage"
)

// simPageCacheBudget is the process's broker-wide page-cache budget
// (log.page.cache.broker.bytes): a few replicas' windows, so that a node
// holding more replicas than that shrinks those written least recently
// (storage.PlanCacheBudget, Log.DropCacheTo) across crashes, truncations,
// moves and closes; Mem breaks under -tags invariants at advice over
// unsynced bytes. Advice changes nothing Mem serves, and the ledger draws
// no randomness, so no trace depends on it.
const simPageCacheBudget = 3 * simPageCacheWindow

// pageCacheLedger is node's pageCacheBudget for one process, run inline
// after the replica's own drop (the simulation has one goroutine): the
// replicas with cached bytes, in the order they entered, and the order of
// their writes.
type pageCacheLedger struct {
	seq     uint64
	reps    []*replica
	uses    []storage.CacheUse
	order   []int
	shrinks []storage.CacheShrink
}

// noteCache records that r was written and fsynced and carries out a
// budget run when the replicas together hold more than the budget.
func (p *process) noteCache(r *replica) {
	c := &p.pageCache
	c.seq++
	c.set(r, r.log.CachedBytes(), c.seq)
	c.shrinks, c.order = storage.PlanCacheBudget(c.uses, simPageCacheBudget, c.order, c.shrinks[:0])
	if len(c.shrinks) == 0 {
		return
	}
	shrunk := make([]*replica, len(c.shrinks))
	for i, s := range c.shrinks {
		shrunk[i] = c.reps[s.Index]
		shrunk[i].log.DropCacheTo(s.Keep)
	}
	for _, r := range shrunk {
		c.set(r, r.log.CachedBytes(), 0)
	}
}

// forgetCache drops r from the ledger (its log is closed).
func (p *process) forgetCache(r *replica) { p.pageCache.set(r, 0, 0) }

// set makes r's entry cached bytes written at seq (0: keep the entry's);
// a replica with nothing cached has no entry.
func (c *pageCacheLedger) set(r *replica, cached int64, seq uint64) {
	i := slices.Index(c.reps, r)
	if cached <= 0 {
		if i >= 0 {
			c.reps = slices.Delete(c.reps, i, i+1)
			c.uses = slices.Delete(c.uses, i, i+1)
		}
		return
	}
	if i < 0 {
		c.reps = append(c.reps, r)
		c.uses = append(c.uses, storage.CacheUse{})
		i = len(c.reps) - 1
	}
	c.uses[i].Cached = cached
	if seq != 0 {
		c.uses[i].Seq = seq
	}
}
