package sim

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/records"
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
	servedHW    map[nodePart]int64         // highest HW served as leader
	// groupAcked is, per partition of the data topic, the highest offset
	// whose commit for the simulated group was acknowledged.
	groupAcked map[int32]int64
}

type nodePart struct {
	node int32
	part partKey
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
	return &checker{c: c, epochLeader: map[partKey]map[int32]int32{}, values: map[string]*sentRecord{}, read: map[int32]map[int64]string{}, servedHW: map[nodePart]int64{},
		groupAcked: map[int32]int64{}}
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
// back, across leader epochs and restarts, unless acknowledged data may
// legitimately be lost (write.caching after a power loss).
func (c *Cluster) onLeaderHW(n *node, r *replica) {
	k := c.check
	key := nodePart{n.id, partKey{r.id, r.index}}
	hw := r.leader.HighWatermark()
	if prev, ok := k.servedHW[key]; ok && hw < prev && k.strict() {
		c.violation("%s serves %s below high watermark %d, after serving up to %d", n, r.name(), hw, prev)
		return
	}
	k.servedHW[key] = max(k.servedHW[key], hw)
}

func (c *Cluster) onTruncate(n *node, r *replica, to, from int64) {}

// onAcksAll: when a leader acknowledges acks=all up to target, every
// member of its (maximal) ISR that is running holds the records durably:
// fsynced, or with write.caching at least appended.
func (c *Cluster) onAcksAll(r *replica, target int64) {
	if !c.check.strict() {
		return
	}
	for _, id := range r.leader.Snapshot().MaximalISR {
		p := c.nodes[id].proc
		if p == nil {
			continue
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
			c.violation("n%d acknowledged acks=all up to offset %d of %s, but ISR member n%d holds only %d durably",
				r.p.n.id, target, r.name(), id, have)
			return
		}
	}
}

// checkImage: a node's view of every partition's epochs only grows.
func (c *Cluster) checkImage(n *node, prev, next *metadata.Image) {
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

// converged: one active controller every node agrees with, and every
// partition led, with its full replica set in sync and every log equal.
func (c *Cluster) converged() bool {
	return c.convergenceReport() == ""
}

func (c *Cluster) convergenceReport() string {
	ctl := c.activeController()
	if ctl == nil {
		return "no active controller"
	}
	if _, ok := ctl.image.Topic(topicName); !ok {
		return "topic not created"
	}
	for _, id := range c.ids {
		p := c.nodes[id].proc
		if p == nil {
			return fmt.Sprintf("n%d is down", id)
		}
		if p.brokerEpoch < 0 {
			return fmt.Sprintf("n%d not registered", id)
		}
		if br, ok := ctl.image.Broker(id); !ok || br.Fenced {
			return fmt.Sprintf("n%d fenced", id)
		}
	}
	for _, t := range ctl.image.Topics() {
		if msg := c.partitionsConverged(t); msg != "" {
			return msg
		}
	}
	return ""
}

func (c *Cluster) partitionsConverged(t *metadata.Topic) string {
	for _, st := range t.Partitions {
		if st.Leader < 0 || len(st.ISR) != len(st.Replicas) {
			return fmt.Sprintf("%s-%d: leader %d isr %v replicas %v; %s", t.Name, st.Index, st.Leader, st.ISR, st.Replicas, c.replicaReport(t.ID, st))
		}
		lp := c.nodes[st.Leader].proc
		lr := lp.parts[partKey{t.ID, st.Index}]
		if lr == nil || lr.leader == nil || lr.leaderEpoch != st.LeaderEpoch {
			return fmt.Sprintf("%s-%d: n%d does not lead epoch %d yet", t.Name, st.Index, st.Leader, st.LeaderEpoch)
		}
		leo := lr.log.LogEndOffset()
		if lr.hw != leo {
			return fmt.Sprintf("%s-%d: leader hw %d, log end %d", t.Name, st.Index, lr.hw, leo)
		}
		for _, id := range st.Replicas {
			r := c.nodes[id].proc.parts[partKey{t.ID, st.Index}]
			if r == nil || r.log.LogEndOffset() != leo {
				return fmt.Sprintf("%s-%d: n%d not caught up", t.Name, st.Index, id)
			}
		}
	}
	return ""
}

// logEntry is one record of a converged log.
type logEntry struct {
	value string
	epoch int32
}

func readAll(r *replica, upTo int64) ([]logEntry, error) {
	var out []logEntry
	next := r.log.LogStartOffset()
	for next < upTo {
		data, err := r.log.Read(next, 1<<20, upTo, true)
		if err != nil {
			return nil, err
		}
		if len(data) == 0 {
			return nil, fmt.Errorf("empty read at %d below %d", next, upTo)
		}
		err = batch.Split(data, func(b []byte) error {
			h, recs, err := records.Decode(b, 1<<20)
			if err != nil {
				return err
			}
			if h.BaseOffset != next {
				return fmt.Errorf("batch at %d follows offset %d: offsets not contiguous", h.BaseOffset, next-1)
			}
			for _, rec := range recs {
				out = append(out, logEntry{string(rec.Value), h.LeaderEpoch})
			}
			next = h.LastOffset() + 1
			return nil
		})
		if err != nil && !errors.Is(err, batch.ErrTruncated) {
			return nil, err
		}
	}
	return out, nil
}

// final checks the converged logs against everything that was
// acknowledged and read.
func (k *checker) final() {
	c := k.c
	ctl := c.activeController()
	for _, t := range ctl.image.Topics() {
		for _, st := range t.Partitions {
			if _, ok := c.sameBelowHW(t, st); !ok {
				return
			}
		}
	}
	if !k.finalGroupCheck(ctl) {
		return
	}
	t, _ := ctl.image.Topic(topicName)
	strict := k.strict()
	for _, st := range t.Partitions {
		ref, _ := c.sameBelowHW(t, st)
		seen := map[string]int64{}
		for off, e := range ref {
			if prev, dup := seen[e.value]; dup {
				if r := k.values[e.value]; r != nil && r.spec.Idempotent {
					c.violation("partition %d: idempotent record %s at offsets %d and %d", st.Index, e.value, prev, off)
					return
				}
			}
			seen[e.value] = int64(off)
		}
		if !strict {
			continue
		}
		read := k.read[st.Index]
		for _, off := range slices.Sorted(maps.Keys(read)) {
			v := read[off]
			if off >= int64(len(ref)) || ref[off].value != v {
				got := "nothing"
				if off < int64(len(ref)) {
					got = fmt.Sprintf("%q", ref[off].value)
				}
				c.violation("partition %d offset %d was read as %q and now holds %s (a read record was truncated)", st.Index, off, v, got)
				return
			}
		}
	}
	for _, r := range k.order {
		if !r.acked {
			k.stats.Unacked++
			continue
		}
		if r.spec.Acks != -1 || !strict {
			continue
		}
		st := t.Partitions[r.partition]
		lr := c.nodes[st.Leader].proc.parts[partKey{t.ID, st.Index}]
		ref, _ := readAll(lr, lr.hw)
		if r.offset >= int64(len(ref)) || ref[r.offset].value != r.value {
			got := "nothing"
			if r.offset < int64(len(ref)) {
				got = fmt.Sprintf("%q", ref[r.offset].value)
			}
			c.violation("acks=all record %s acknowledged at partition %d offset %d by n%d at %.3fs is lost: the offset holds %s",
				r.value, r.partition, r.offset, r.ackedBy, r.ackedAtSec, got)
			return
		}
	}
}

func (c *Cluster) result() Result {
	st := c.check.stats
	st.MessagesSent, st.Dropped = c.net.sent, c.net.dropped
	return Result{Seed: c.opts.Seed, Options: c.opts, SimTime: c.s.now, Steps: c.s.steps, TraceHash: c.trace.hash,
		Violations: c.check.violations, Trace: c.trace.tail(), Stats: st}
}

// Failure renders a failed run for a person.
func (r Result) Failure() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "seed %d FAILED after %v simulated (%d steps)\n", r.Seed, r.SimTime, r.Steps)
	fmt.Fprintf(&sb, "options: %s\n", r.Options)
	for _, v := range r.Violations {
		fmt.Fprintf(&sb, "violation: %s\n", v)
	}
	fmt.Fprintf(&sb, "replay: go test ./internal/sim/ -run TestSeeds -sim.seed=%d -v\n", r.Seed)
	fmt.Fprintf(&sb, "last events:\n%s", r.Trace)
	return sb.String()
}

// replicaReport describes each replica of a partition, for a person
// reading why a run did not converge.
func (c *Cluster) replicaReport(id metadata.TopicID, st metadata.Partition) string {
	var parts []string
	for _, n := range st.Replicas {
		p := c.nodes[n].proc
		if p == nil {
			parts = append(parts, fmt.Sprintf("n%d down", n))
			continue
		}
		r := p.parts[partKey{id, st.Index}]
		if r == nil {
			parts = append(parts, fmt.Sprintf("n%d has no replica", n))
			continue
		}
		desc := fmt.Sprintf("n%d: epoch %d leader %v log end %d hw %d", n, r.leaderEpoch, r.leader != nil, r.log.LogEndOffset(), r.hw)
		if r.failed != nil {
			desc += fmt.Sprintf(" failed (%v)", r.failed)
		}
		if f, ok := p.fetchers[st.Leader]; ok {
			if fs := f.parts[r]; fs != nil {
				desc += fmt.Sprintf(" fetcher: epoch %d truncate %v", fs.epoch, fs.truncate)
			}
		}
		if r.leader != nil {
			desc += fmt.Sprintf(" %+v", r.leader.Snapshot())
		}
		parts = append(parts, desc)
	}
	return strings.Join(parts, "; ")
}

// sameBelowHW reads a converged partition on its leader below the high
// watermark and checks every other replica holds the same records there.
func (c *Cluster) sameBelowHW(t *metadata.Topic, st metadata.Partition) ([]logEntry, bool) {
	lr := c.nodes[st.Leader].proc.parts[partKey{t.ID, st.Index}]
	ref, err := readAll(lr, lr.hw)
	if err != nil {
		c.violation("%s-%d on leader n%d: %v", t.Name, st.Index, st.Leader, err)
		return nil, false
	}
	for _, id := range st.ISR {
		if id == st.Leader {
			continue
		}
		got, err := readAll(c.nodes[id].proc.parts[partKey{t.ID, st.Index}], lr.hw)
		if err != nil {
			c.violation("%s-%d on n%d: %v", t.Name, st.Index, id, err)
			return nil, false
		}
		for off := range min(len(got), len(ref)) {
			if got[off].value != ref[off].value {
				c.violation("%s-%d offset %d: leader n%d has %q, n%d has %q", t.Name, st.Index, off, st.Leader, ref[off].value, id, got[off].value)
				return nil, false
			}
		}
	}
	return ref, true
}
