package sim

import (
	"slices"

	"github.com/skein-log/skein/internal/metadata"
)

// checker holds the invariants: some are checked as events happen (one
// leader per epoch, epochs only grow, high watermarks only grow, consumers
// agree with each other), the rest at the end against the converged logs
// (no acknowledged record lost, no record read and later truncated,
// replicas identical below the high watermark, no duplicates from
// idempotent producers, contiguous offsets).
type checker struct {
	c          *Cluster
	violations []string
	stats      Stats

	epochLeader map[partKey]map[int32]int32 // partition -> leader epoch -> node
	values      map[string]*sentRecord
	order       []*sentRecord
	read        map[int32]map[int64]string // partition -> offset -> value consumers saw
	servedHW    map[nodePart]int64         // highest HW served as leader, per incarnation
	servedLSO   map[nodePart]int64         // highest last stable offset served as leader, per incarnation
	// droppedAt is the partition epoch of the image in which a node
	// stopped its replica (no longer listed there; node, partition).
	droppedAt map[nodePart]int32
	groups    groupChecks
	quorum    quorumChecks
	txns      txnChecks
	txnCoord  txnCoordChecks
	// chainState is the chain's (checker_chain.go), made on first use.
	chainState *chainChecks
	// logDirMoves are the moves between log directories started and not
	// ended yet, with their destinations (logdirs.go).
	logDirMoves map[logDirKey]*logDirWant
}

type nodePart struct {
	node        int32
	incarnation uint64
	part        partKey
}

type sentRecord struct {
	value      string
	partition  int32
	spec       ProducerSpec
	acked      bool
	offset     int64
	ackedBy    int32
	ackedAtSec float64
}

func newChecker(c *Cluster) *checker {
	return &checker{c: c, epochLeader: map[partKey]map[int32]int32{}, values: map[string]*sentRecord{}, read: map[int32]map[int64]string{}, servedHW: map[nodePart]int64{}, servedLSO: map[nodePart]int64{},
		droppedAt: map[nodePart]int32{}, groups: newGroupChecks(), quorum: newQuorumChecks(), txnCoord: newTxnCoordChecks()}
}

// strict says whether acknowledged (acks=all) and consumed records must
// all survive: always, except with write.caching once a machine lost
// power. write.caching acknowledges what is only in the ISR's page
// caches; a power loss of every ISR member (all machines at once, or the
// last member of a shrunken ISR, which then leads again from the ELR)
// loses it. That is the trade the topic setting makes.
//
// A flipped bit makes recovery cut a replica's log at the rotten batch,
// which may lie below the high watermark: that replica lost acknowledged
// records, and if it was the last of its ISR (or in the ELR) it may lead
// again without them. Such runs check everything but loss.
func (k *checker) strict() bool {
	return !(k.c.opts.WriteCaching && k.c.faults.powerLost) && !k.c.faults.corrupted
}

func (k *checker) sent(v string, part int32, spec ProducerSpec) *sentRecord {
	r := &sentRecord{value: v, partition: part, spec: spec, offset: -1}
	k.values[v] = r
	k.order = append(k.order, r)
	return r
}

func (k *checker) acked(recs []*sentRecord, base int64, leader int32) {
	for i, r := range recs {
		if r.acked && r.offset != base+int64(i) && r.spec.Idempotent {
			k.c.violation("idempotent record %s acknowledged twice at offsets %d and %d", r.value, r.offset, base+int64(i))
			return
		}
		r.acked, r.offset, r.ackedBy, r.ackedAtSec = true, base+int64(i), leader, k.c.s.now.Seconds()
		k.stats.Acked++
	}
	k.c.tracef("ack %s..%s at %d-%d by n%d (acks=%d)", recs[0].value, recs[len(recs)-1].value, recs[0].partition, base, leader, recs[0].spec.Acks)
}

func (k *checker) consumed(part int32, off int64, v string, from int32) {
	m := k.read[part]
	if m == nil {
		m = map[int64]string{}
		k.read[part] = m
	}
	if prev, ok := m[off]; ok && prev != v && k.strict() {
		k.c.violation("partition %d offset %d read as %q and, from n%d, as %q", part, off, prev, from, v)
		return
	}
	if _, ok := m[off]; !ok {
		k.stats.Consumed++
	}
	m[off] = v
}

func (k *checker) consumerOutOfRange(part int32, off int64, from int32) {
	if k.strict() && off > 0 {
		if _, ok := k.read[part][off-1]; ok {
			k.c.tracef("consumer offset %d of partition %d out of range on n%d", off, part, from)
		}
	}
}

// onBecomeLeader: at most one leader per partition per leader epoch.
func (c *Cluster) onBecomeLeader(n *node, r *replica, epoch int32) {
	k := c.check
	pk := partKey{r.id, r.index}
	m := k.epochLeader[pk]
	if m == nil {
		m = map[int32]int32{}
		k.epochLeader[pk] = m
	}
	if prev, ok := m[epoch]; ok && prev != n.id {
		c.violation("%s has two leaders in epoch %d: n%d and n%d", r.name(), epoch, prev, n.id)
		return
	}
	if _, ok := m[epoch]; !ok {
		k.stats.Elections++
	}
	m[epoch] = n.id
}

// onLeaderHW: the high watermark a replica serves reads below never goes
// back, across leader epochs, unless acknowledged data may legitimately be
// lost (write.caching after a power loss); and every running member of the
// ISR holds what it covers. A restarted replica starts its high watermark
// at its log start (it cannot know which of its records were committed:
// replica.Open), so only one incarnation's is
// monotonic; what the previous one served was covered by the ISR, which
// the second check holds the new one to.
func (c *Cluster) onLeaderHW(n *node, r *replica) {
	k := c.check
	key := nodePart{n.id, n.incarnation, partKey{r.id, r.index}}
	hw := r.core.HighWatermark()
	if prev, ok := k.servedHW[key]; ok && hw < prev && k.strict() {
		c.violation("%s serves %s below high watermark %d, after serving up to %d", n, r.name(), hw, prev)
		return
	}
	k.servedHW[key] = max(k.servedHW[key], hw)
	c.checkISRHolds(r, hw, "published high watermark")
}

// onReplicaDropped: a replica its node stopped (the image no longer lists
// it there) is gone; one the node opens again later starts its high
// watermark and last stable offset afresh, as a restarted replica does (what this one served
// stays covered by the ISR, which checkISRHolds holds the next to).
//
// It also notes the partition epoch of the image that dropped it: a leader
// whose view is older (paused, say) still counts the replica in its ISR,
// and may publish a high watermark that replica held before it went; the
// replica the node may open again later is a new one, which checkISRHolds
// holds to what it covers only once a view newer than the drop has it in
// the ISR.
func (c *Cluster) onReplicaDropped(n *node, r *replica, partitionEpoch int32) {
	pk := partKey{r.id, r.index}
	delete(c.check.servedHW, nodePart{n.id, n.incarnation, pk})
	delete(c.check.servedLSO, nodePart{n.id, n.incarnation, pk})
	c.check.droppedAt[nodePart{node: n.id, part: pk}] = partitionEpoch
}

// onAcksAll: when a leader acknowledges acks=all up to target, every
// member of its (maximal) ISR that is running holds the records durably:
// fsynced, or with write.caching at least appended.
func (c *Cluster) onAcksAll(r *replica, target int64) {
	c.checkISRHolds(r, target, "acknowledged acks=all")
}

// checkISRHolds: every running member of r's maximal ISR holds r's log up
// to target durably (with write.caching, appended).
func (c *Cluster) checkISRHolds(r *replica, target int64, what string) {
	if !c.check.strict() {
		return
	}
	snap, _ := r.core.LeaderSnapshot()
	view := r.core.State().PartitionEpoch
	for _, id := range snap.MaximalISR {
		p := c.nodes[id].proc
		if p == nil {
			continue
		}
		if e, ok := c.check.droppedAt[nodePart{node: id, part: partKey{r.id, r.index}}]; ok && e > view {
			continue // the leader's view predates the member's leaving
		}
		m := p.parts[partKey{r.id, r.index}]
		if m == nil {
			continue
		}
		have := m.log.DurableEndOffset()
		if c.opts.WriteCaching {
			have = m.log.LogEndOffset()
		}
		if have < target {
			c.violation("n%d %s up to offset %d of %s, but ISR member n%d holds only %d durably",
				r.p.n.id, what, target, r.name(), id, have)
			return
		}
	}
}

// checkImage: a node's view of every partition's epochs only grows, and
// no broker holds more replicas than it can keep open (checkCapacity).
func (c *Cluster) checkImage(n *node, prev, next *metadata.Image) {
	c.checkCapacity(n, next)
	for _, t := range prev.Topics() {
		nt, ok := next.TopicByID(t.ID)
		if !ok {
			continue
		}
		for i, p := range t.Partitions {
			if i >= len(nt.Partitions) {
				break
			}
			q := nt.Partitions[i]
			if q.LeaderEpoch < p.LeaderEpoch || q.PartitionEpoch < p.PartitionEpoch {
				c.violation("%s: partition %d epochs went back: leader epoch %d -> %d, partition epoch %d -> %d",
					n, i, p.LeaderEpoch, q.LeaderEpoch, p.PartitionEpoch, q.PartitionEpoch)
			}
			if q.Leader >= 0 && !slices.Contains(q.ISR, q.Leader) {
				c.violation("%s: partition %d leader %d not in its ISR %v", n, i, q.Leader, q.ISR)
			}
		}
	}
}
