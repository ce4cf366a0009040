package sim

import (
	"bytes"
	"cmp"

	"github.com/skein-log/skein/internal/batch"
)

// comparePartKeys orders partitions by topic id, then index.
func comparePartKeys(a, b partKey) int {
	if c := bytes.Compare(a.topic[:], b.topic[:]); c != 0 {
		return c
	}
	return cmp.Compare(a.index, b.index)
}

// Checks of the partition side of transactions (issue 16), on every
// replica of every node, leaders and followers alike (a follower's last
// stable offset is the one it starts from when promoted):
//   - the last stable offset is never above the high watermark;
//   - the one a leader serves never goes back within one incarnation
//     (as the high watermark; waived where acknowledged data may be lost);
//   - it never passes the first offset of a transaction the replica's own
//     log holds open, recomputed here from the log's batches and markers
//     without the producer table the core uses (at the end, and whenever
//     the log holds transactions).

// onLSO runs after every Ready of a replica.
func (c *Cluster) onLSO(n *node, r *replica) {
	k := c.check
	lso, hw := r.core.LastStableOffset(), r.core.HighWatermark()
	if lso > hw {
		c.violation("%s: %s last stable offset %d above its high watermark %d", n, r.name(), lso, hw)
		return
	}
	if !r.core.IsLeader() {
		return
	}
	key := nodePart{n.id, n.incarnation, partKey{r.id, r.index}}
	if prev, ok := k.servedLSO[key]; ok && lso < prev && k.strict() {
		c.violation("%s serves %s below last stable offset %d, after serving up to %d", n, r.name(), lso, prev)
		return
	}
	k.servedLSO[key] = max(k.servedLSO[key], lso)
}

// checkOpenTransactions recomputes r's open transactions from its log and
// checks that its last stable offset is at or below the first offset of
// each. Only data batches with the transactional attribute open one; a
// COMMIT or ABORT marker of the producer closes it.
func (c *Cluster) checkOpenTransactions(n *node, r *replica) {
	open := map[int64]int64{} // producer id -> first offset
	err := r.log.ScanBatches(r.log.LogStartOffset(), func(h batch.Header, control []byte) error {
		switch {
		case h.IsControl():
			if _, err := batch.ParseMarker(control); err == nil {
				delete(open, h.ProducerID)
			}
		case h.IsTransactional():
			if _, ok := open[h.ProducerID]; !ok {
				open[h.ProducerID] = h.BaseOffset
			}
		}
		return nil
	})
	if err != nil {
		return // a damaged log is the recovery checks' business
	}
	lso := r.core.LastStableOffset()
	for pid, first := range open {
		if lso > first {
			c.violation("%s: %s last stable offset %d passes producer %d's open transaction at %d", n, r.name(), lso, pid, first)
			return
		}
	}
}
