package verify

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// position is one offset of one partition.
type position struct {
	partition int32
	offset    int64
}

func (p position) String() string { return fmt.Sprintf("%d@%d", p.partition, p.offset) }

// observation is one value seen at a position, and who saw it.
type observation struct {
	value  string
	source string // "consumer 2" or "ack"
}

// maxDistinct bounds how many distinct values per offset (and offsets per
// value) the checker keeps: a broken broker could otherwise make these
// lists as long as the history. Counting an anomaly needs two.
const maxDistinct = 4

type sendInfo struct {
	producer  int
	seq       int64
	partition int32
}

type ackInfo struct {
	value string
	at    position // offset -1 when unknown
}

// consumerPartition keys a consumer's progress through one partition.
type consumerPartition struct {
	consumer  int
	partition int32
}

// producerPartition keys one producer's values in one partition.
type producerPartition struct {
	producer  int
	partition int32
}

// checker holds the indexes built from one pass over the history.
type checker struct {
	res          *Result
	sends        map[string]sendInfo
	acks         []ackInfo
	failed       map[string]bool // value -> definite
	atOffset     map[position][]observation
	offsetsOf    map[string][]position // distinct positions a value was seen at
	readSet      map[string]bool       // by anyone
	assignedRead map[string]bool       // by the assigned consumers
	readOrder    map[int32][]int64     // per partition, offsets read, first time each
	maxRead      map[int32]int64
	maxSeqRead   map[producerPartition]int64
	lastRead     map[consumerPartition]int64
	group        *groupChecker // nil without group members
}

// Check reads the whole history and reports every anomaly it finds.
// Which kinds count against validity depends on h.Meta (acks, idempotence).
func Check(h *History) *Result {
	c := &checker{
		res:          newResult(h.Meta),
		sends:        map[string]sendInfo{},
		failed:       map[string]bool{},
		atOffset:     map[position][]observation{},
		offsetsOf:    map[string][]position{},
		readSet:      map[string]bool{},
		assignedRead: map[string]bool{},
		readOrder:    map[int32][]int64{},
		maxRead:      map[int32]int64{},
		maxSeqRead:   map[producerPartition]int64{},
		lastRead:     map[consumerPartition]int64{},
	}
	if h.Meta.GroupMembers > 0 {
		c.group = newGroupChecker()
	}
	for i := range h.Events {
		c.index(&h.Events[i])
	}
	// With acks=all an acknowledged offset is a fact about the log, as good
	// as a read; with acks=1 or 0 it may legitimately be truncated and
	// reused, so it is not compared with reads.
	if h.Meta.Acks == AcksAll {
		for _, a := range c.acks {
			if a.at.offset >= 0 {
				c.observe(a.at, a.value, "ack")
			}
		}
	}
	if h.Meta.Consumers > 0 {
		c.checkAcked()
	}
	if c.group != nil {
		c.checkGroupAcked()
	}
	c.checkOrder()
	c.checkFailed()
	return c.finish()
}

// finish runs the checks every workload shares, on offsets and values,
// and settles the verdict.
func (c *checker) finish() *Result {
	c.checkOffsets()
	c.checkValues()
	c.res.ReadValues = len(c.readSet)
	c.res.Valid = c.res.Anomalies() == 0
	return c.res
}

// index takes one event into the indexes; poll order is checked here,
// since it depends on the order reads happened in.
func (c *checker) index(e *Event) {
	switch e.Type {
	case EventSend:
		c.res.Sent++
		if _, dup := c.sends[e.Value]; !dup {
			c.sends[e.Value] = sendInfo{producer: e.Producer, seq: e.Seq, partition: e.Partition}
		}
	case EventAck:
		c.res.Acked++
		c.acks = append(c.acks, ackInfo{value: e.Value, at: position{e.Partition, e.Offset}})
	case EventFail:
		if e.Definite {
			c.res.Failed++
		} else {
			c.res.Indefinite++
		}
		c.failed[e.Value] = e.Definite
		c.res.addFailure(e.Err)
	case EventRead:
		c.res.Reads++
		if e.Group != "" && c.group != nil {
			c.groupRead(e) // before read: a resume starts a new run of reads
		}
		c.read(e)
	case EventAssign, EventRevoke, EventCommit, EventCommitDone:
		if c.group != nil {
			c.groupEvent(e)
		}
	}
}

func (c *checker) read(e *Event) {
	at := position{e.Partition, e.Offset}
	if _, seen := c.atOffset[at]; !seen {
		c.readOrder[at.partition] = append(c.readOrder[at.partition], at.offset)
	}
	c.observe(at, e.Value, fmt.Sprintf("consumer %d", e.Consumer))
	c.readSet[e.Value] = true
	if e.Group == "" {
		c.assignedRead[e.Value] = true
	}
	if m, ok := c.maxRead[at.partition]; !ok || at.offset > m {
		c.maxRead[at.partition] = at.offset
	}
	if s, ok := c.sends[e.Value]; ok {
		pp := producerPartition{s.producer, at.partition}
		if m, ok := c.maxSeqRead[pp]; !ok || s.seq > m {
			c.maxSeqRead[pp] = s.seq
		}
	}
	last, ok := c.stepRead(e)
	switch {
	case !ok:
	case e.Offset > last+1:
		c.res.add(Anomaly{Kind: PollSkip, Value: e.Value, Partition: e.Partition, Offset: e.Offset, Consumer: e.Consumer,
			Detail: fmt.Sprintf("consumer %d jumped in partition %d from offset %d to %d (poll %d), skipping %d", e.Consumer, e.Partition, last, e.Offset, e.Poll, e.Offset-last-1)})
	}
}

// stepRead moves consumer e.Consumer's place in e.Partition to e.Offset,
// reporting a read at or before the last one as NonMonotonicPoll. It
// returns the last offset read before, and whether there was one and the
// read went forward from it.
func (c *checker) stepRead(e *Event) (int64, bool) {
	cp := consumerPartition{e.Consumer, e.Partition}
	last, ok := c.lastRead[cp]
	c.lastRead[cp] = e.Offset
	if ok && e.Offset <= last {
		c.res.add(Anomaly{Kind: NonMonotonicPoll, Value: e.Value, Partition: e.Partition, Offset: e.Offset, Consumer: e.Consumer,
			Detail: fmt.Sprintf("consumer %d read partition %d offset %d (poll %d) after offset %d", e.Consumer, e.Partition, e.Offset, e.Poll, last)})
		return last, false
	}
	return last, ok
}

// observe records that value was seen at a position, keeping at most
// maxDistinct distinct values per position and positions per value.
func (c *checker) observe(at position, value, source string) {
	obs := c.atOffset[at]
	if !slices.ContainsFunc(obs, func(o observation) bool { return o.value == value }) && len(obs) < maxDistinct {
		c.atOffset[at] = append(obs, observation{value, source})
	}
	ps := c.offsetsOf[value]
	if !slices.Contains(ps, at) && len(ps) < maxDistinct {
		c.offsetsOf[value] = append(ps, at)
	}
}

// checkAcked finds acknowledged values the assigned consumers never
// read: lost when something after them was read, unseen otherwise.
func (c *checker) checkAcked() {
	for _, a := range c.acks {
		if c.assignedRead[a.value] {
			continue
		}
		kind, why := Unseen, a.value+": acknowledged"
		if a.at.offset >= 0 {
			why += " at " + a.at.String()
			if m, ok := c.maxRead[a.at.partition]; ok && m > a.at.offset {
				kind, why = Lost, fmt.Sprintf("%s, never read, though offset %d was", why, m)
			}
		} else if s, ok := c.sends[a.value]; ok {
			// No offset (acks=0): lost if a later value of the same
			// producer in the same partition was read.
			if m, ok := c.maxSeqRead[producerPartition{s.producer, a.at.partition}]; ok && m > s.seq {
				kind, why = Lost, fmt.Sprintf("%s: acknowledged without an offset, never read, though the producer's value %d in partition %d was", a.value, m, a.at.partition)
			}
		}
		if kind == Unseen {
			why += ", never read by the end"
		}
		c.res.add(Anomaly{Kind: kind, Value: a.value, Partition: a.at.partition, Offset: a.at.offset, Detail: why})
	}
}

// checkOffsets finds offsets holding more than one value, in partition
// and offset order so the examples are the earliest.
func (c *checker) checkOffsets() {
	for _, at := range sortedPositions(c.atOffset) {
		obs := c.atOffset[at]
		if len(obs) < 2 {
			continue
		}
		parts := make([]string, len(obs))
		for i, o := range obs {
			parts[i] = fmt.Sprintf("%s (%s)", o.value, o.source)
		}
		c.res.add(Anomaly{Kind: InconsistentOffset, Value: obs[0].value, Partition: at.partition, Offset: at.offset,
			Detail: fmt.Sprintf("offset %s holds %s", at, strings.Join(parts, " and "))})
	}
}

// checkValues finds values at more than one offset, and values no
// producer sent.
func (c *checker) checkValues() {
	values := make([]string, 0, len(c.offsetsOf))
	for v := range c.offsetsOf {
		values = append(values, v)
	}
	slices.Sort(values)
	for _, v := range values {
		ps := c.offsetsOf[v]
		if len(ps) > 1 {
			names := make([]string, len(ps))
			for i, p := range ps {
				names[i] = p.String()
			}
			c.res.add(Anomaly{Kind: Duplicated, Value: v, Partition: ps[0].partition, Offset: ps[0].offset,
				Detail: fmt.Sprintf("%s at %s", v, strings.Join(names, " and "))})
		}
		if _, sent := c.sends[v]; !sent && c.readSet[v] {
			c.res.add(Anomaly{Kind: Phantom, Value: v, Partition: ps[0].partition, Offset: ps[0].offset,
				Detail: fmt.Sprintf("%s read at %s was never sent", v, ps[0])})
		}
	}
}

// checkOrder walks each partition's read offsets in order and finds a
// producer's value following one it sent later. A duplicated value counts
// only at its first offset: the copy is reported as a duplicate.
func (c *checker) checkOrder() {
	partitions := make([]int32, 0, len(c.readOrder))
	for p := range c.readOrder {
		partitions = append(partitions, p)
	}
	slices.Sort(partitions)
	for _, p := range partitions {
		offsets := slices.Clone(c.readOrder[p])
		slices.Sort(offsets)
		type last struct {
			seq    int64
			value  string
			offset int64
		}
		latest := map[int]last{}
		for _, o := range offsets {
			v := c.atOffset[position{p, o}][0].value
			s, ok := c.sends[v]
			if !ok || c.offsetsOf[v][0] != (position{p, o}) {
				continue
			}
			l, seen := latest[s.producer]
			if seen && s.seq < l.seq {
				c.res.add(Anomaly{Kind: Reordered, Value: v, Partition: p, Offset: o,
					Detail: fmt.Sprintf("%s at offset %d of partition %d comes after %s at offset %d, sent later", v, o, p, l.value, l.offset)})
				continue
			}
			latest[s.producer] = last{s.seq, v, o}
		}
	}
}

// checkFailed finds failed sends that were read after all.
func (c *checker) checkFailed() {
	values := make([]string, 0, len(c.failed))
	for v := range c.failed {
		values = append(values, v)
	}
	slices.Sort(values)
	for _, v := range values {
		if !c.readSet[v] {
			continue
		}
		if !c.failed[v] {
			c.res.IndefiniteButPresent++
			continue
		}
		at := c.offsetsOf[v][0]
		c.res.add(Anomaly{Kind: FailedButPresent, Value: v, Partition: at.partition, Offset: at.offset,
			Detail: fmt.Sprintf("%s was reported failed, yet read at %s", v, at)})
	}
}

func sortedPositions(m map[position][]observation) []position {
	return slices.SortedFunc(maps.Keys(m), comparePositions)
}
