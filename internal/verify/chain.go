package verify

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Anomalies of the txn workload's consume-transform-produce chain
// (checkChain).
const (
	// ChainLost: an output record of a committed chain transaction that a
	// read_committed output consumer never read, or a committed input
	// record below the group's committed offset that no committed output
	// transforms.
	ChainLost Kind = "chain-lost"
	// ChainPartial: a chain transaction with an unknown outcome of which
	// some output was read but not all, or not by every consumer.
	ChainPartial Kind = "chain-partial"
	// ChainAbortedRead: an output record of an aborted chain transaction
	// (or one never ended) delivered to a read_committed consumer.
	ChainAbortedRead Kind = "chain-aborted-read"
	// ChainDuplicate: one input record transformed by two committed
	// outputs, or one output read twice by a consumer.
	ChainDuplicate Kind = "chain-duplicate"
	// ChainOffset: committed offsets that did not move exactly with their
	// transaction: the group's committed offset after the run is not the
	// one the last committed transaction carried, a committed transaction
	// carried an offset at or below an input it transformed, or a
	// committed output transforms an input at or past the committed
	// offset.
	ChainOffset Kind = "chain-offset"
	// ChainPhantom: an output no transformer wrote, or one (or a
	// transformer's read) whose input read_committed consumers never
	// delivered at that offset.
	ChainPhantom Kind = "chain-phantom"
	// FencedCommit: a chain transaction committed whose end was sent by a
	// producer already fenced (a newer InitProducerId answer for its
	// transactional id had been given before).
	FencedCommit Kind = "fenced-commit"
)

// ChainKinds lists the chain's anomaly kinds, in report order.
var ChainKinds = []Kind{ChainLost, ChainPartial, ChainAbortedRead, ChainDuplicate, ChainOffset, ChainPhantom, FencedCommit}

// ChainValue is the output record a transformer writes in transaction txn
// for the input record value at partition/offset: the checker reads back
// from the output alone which input it transforms and in which
// transaction.
func ChainValue(txn string, partition int32, offset int64, value string) string {
	return fmt.Sprintf("%s|%d|%d|%s", txn, partition, offset, value)
}

// chainOutput is an output value taken apart.
type chainOutput struct {
	txn   string
	input position
	value string
}

func parseChainValue(v string) (chainOutput, bool) {
	parts := strings.SplitN(v, "|", 4)
	if len(parts) != 4 {
		return chainOutput{}, false
	}
	p, err1 := strconv.ParseInt(parts[1], 10, 32)
	o, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return chainOutput{}, false
	}
	return chainOutput{txn: parts[0], input: position{int32(p), o}, value: parts[3]}, true
}

// chainTxn is one transaction of the chain, as its transformer recorded
// it.
type chainTxn struct {
	name        string
	transformer int
	inputs      []position
	outputs     []string
	offsets     map[int32]int64
	outcome     txnOutcome // txnAborted until an end says otherwise
	ended       bool
	sentAt      time.Duration // when its end was sent
	pid         int64
	epoch       int16
}

// chainInit is one InitProducerId answer a transformer's client got.
type chainInit struct {
	pid   int64
	epoch int16
	at    time.Duration
}

// ChainStats are the chain's counts for the verdict.
type ChainStats struct {
	Committed int `json:"committed"`
	Aborted   int `json:"aborted"`
	Unknown   int `json:"unknown"`
	// UnknownCommitted: unknown transactions every consumer read whole.
	UnknownCommitted int `json:"unknown_committed"`
	// Inits counts InitProducerId answers; FencedEnds the ends sent by a
	// producer already fenced (none may commit).
	Inits      int `json:"inits"`
	FencedEnds int `json:"fenced_ends"`
	// OutputReads counts output records read; Inputs the committed input
	// records below the final committed offsets, Transformed those of
	// them transformed exactly once in the committed output.
	OutputReads int `json:"output_reads"`
	Inputs      int `json:"inputs"`
	Transformed int `json:"transformed"`
	// Final is the group's committed offset per input partition after the
	// run (-1: none); nil when it could not be read.
	Final map[int32]int64 `json:"final,omitempty"`
}

// checkChain judges the chain: every output of a committed transaction
// read by every read_committed output consumer, none of an aborted one,
// all or nothing of an unknown one; no fenced producer commits; each
// committed transaction carries offsets past its inputs, and the group's
// committed offset after the run is the one the last committed
// transaction carried; below it every committed input record is
// transformed exactly once in the committed output, at or past it none.
func (c *checker) checkChain(h *History) {
	st := &ChainStats{}
	c.res.Chain = st
	committedIn := map[position]string{} // what read_committed consumers read
	inits := map[int][]chainInit{}
	txns := map[string]*chainTxn{}
	var order []string
	txnOf := func(name string, transformer int) *chainTxn {
		t, ok := txns[name]
		if !ok {
			t = &chainTxn{name: name, transformer: transformer, offsets: map[int32]int64{}, pid: -1}
			txns[name] = t
			order = append(order, name)
		}
		return t
	}
	written := map[string]string{} // output value -> transaction
	readBy := map[int]map[string]int{}
	outAt := map[string]position{} // output value -> where first read
	var final map[int32]int64
	for i := range h.Events {
		e := &h.Events[i]
		switch e.Type {
		case EventRead:
			at := position{e.Partition, e.Offset}
			if _, ok := committedIn[at]; !ok {
				committedIn[at] = e.Value
			}
		case EventChainInit:
			inits[e.Consumer] = append(inits[e.Consumer], chainInit{e.ProducerID, e.Epoch, e.At})
			st.Inits++
		case EventChainRead:
			t := txnOf(e.Txn, e.Consumer)
			t.inputs = append(t.inputs, position{e.Partition, e.Offset})
			if v, ok := committedIn[position{e.Partition, e.Offset}]; ok && v != e.Value {
				c.res.add(Anomaly{Kind: ChainPhantom, Value: e.Value, Partition: e.Partition, Offset: e.Offset,
					Detail: fmt.Sprintf("transformer %d read %s at input %d@%d, where read_committed consumers read %s", e.Consumer, e.Value, e.Partition, e.Offset, v)})
			}
		case EventChainWrite:
			t := txnOf(e.Txn, e.Consumer)
			if _, dup := written[e.Value]; !dup {
				t.outputs = append(t.outputs, e.Value)
				written[e.Value] = e.Txn
			}
		case EventChainOffset:
			txnOf(e.Txn, e.Consumer).offsets[e.Partition] = e.Offset
		case EventChainEnd:
			t := txnOf(e.Txn, e.Consumer)
			t.ended, t.sentAt, t.pid, t.epoch = true, e.At-e.Latency, e.ProducerID, e.Epoch
			switch e.Note {
			case "commit":
				t.outcome = txnCommitted
			case "unknown":
				t.outcome = txnUnknown
			default:
				t.outcome = txnAborted
			}
		case EventChainCommitted:
			if final == nil {
				final = map[int32]int64{}
			}
			final[e.Partition] = e.Offset
		case EventChainOutput:
			st.OutputReads++
			if readBy[e.Consumer] == nil {
				readBy[e.Consumer] = map[string]int{}
			}
			readBy[e.Consumer][e.Value]++
			if _, ok := outAt[e.Value]; !ok {
				outAt[e.Value] = position{e.Partition, e.Offset}
			}
		}
	}
	st.Final = final
	consumers := make([]int, 0, h.Meta.Consumers)
	for id := 1; id <= h.Meta.Consumers; id++ {
		consumers = append(consumers, id)
	}
	// Output values read: written by a transformer, read once each.
	for _, v := range slices.Sorted(maps.Keys(outAt)) {
		at := outAt[v]
		if _, ok := written[v]; !ok {
			c.res.add(Anomaly{Kind: ChainPhantom, Value: v, Partition: at.partition, Offset: at.offset,
				Detail: fmt.Sprintf("output %s read at %s was never written by a transformer", v, at)})
		}
		for _, id := range consumers {
			if n := readBy[id][v]; n > 1 {
				c.res.add(Anomaly{Kind: ChainDuplicate, Value: v, Partition: at.partition, Offset: at.offset, Consumer: id,
					Detail: fmt.Sprintf("consumer %d read output %s %d times", id, v, n)})
			}
		}
	}
	effective := map[string]bool{} // committed, or unknown and read whole
	for _, name := range order {
		t := txns[name]
		if c.chainOutcome(t, consumers, readBy, outAt) {
			effective[name] = true
		}
	}
	c.checkFenced(txns, order, effective, inits)
	c.checkCarried(txns, order, effective)
	if final != nil {
		c.checkFinal(h, txns, order, effective, final, committedIn)
	}
}

// chainOutcome judges one chain transaction's output against what each
// output consumer read; it reports whether the transaction committed
// (confirmed, or unknown and read whole by every consumer).
func (c *checker) chainOutcome(t *chainTxn, consumers []int, readBy map[int]map[string]int, outAt map[string]position) bool {
	st := c.res.Chain
	switch t.outcome {
	case txnCommitted:
		st.Committed++
	case txnAborted:
		st.Aborted++
	case txnUnknown:
		st.Unknown++
	}
	whole, some := 0, false
	var counts []string
	for _, id := range consumers {
		read := 0
		for _, v := range t.outputs {
			if readBy[id][v] == 0 {
				if t.outcome == txnCommitted {
					c.res.add(Anomaly{Kind: ChainLost, Value: v, Partition: -1, Offset: -1, Consumer: id,
						Detail: fmt.Sprintf("output %s of committed chain transaction %s never read by consumer %d", v, t.name, id)})
				}
				continue
			}
			read++
			some = true
			if t.outcome == txnAborted {
				at := outAt[v]
				why := "aborted"
				if !t.ended {
					why = "never ended"
				}
				c.res.add(Anomaly{Kind: ChainAbortedRead, Value: v, Partition: at.partition, Offset: at.offset, Consumer: id,
					Detail: fmt.Sprintf("output %s of %s chain transaction %s read by consumer %d at %s", v, why, t.name, id, at)})
			}
		}
		if read == len(t.outputs) {
			whole++
		}
		counts = append(counts, fmt.Sprintf("consumer %d read %d", id, read))
	}
	switch t.outcome {
	case txnCommitted:
		return true
	case txnAborted:
		return false
	}
	if len(t.outputs) > 0 && whole == len(consumers) {
		st.UnknownCommitted++
		return true
	}
	if some {
		c.res.add(Anomaly{Kind: ChainPartial, Value: t.outputs[0], Partition: -1, Offset: -1,
			Detail: fmt.Sprintf("chain transaction %s (unknown outcome, %d outputs) read in part: %v", t.name, len(t.outputs), counts)})
	}
	return false
}

// checkFenced finds committed transactions whose end was sent after
// another InitProducerId answer for the transformer's transactional id
// (another producer id, or a newer epoch) had been given: the
// coordinator had fenced the sender and must have refused its commit.
func (c *checker) checkFenced(txns map[string]*chainTxn, order []string, effective map[string]bool, inits map[int][]chainInit) {
	for _, name := range order {
		t := txns[name]
		if !t.ended || t.pid < 0 {
			continue
		}
		var latest *chainInit
		for i := range inits[t.transformer] {
			if in := &inits[t.transformer][i]; in.at < t.sentAt {
				latest = in
			}
		}
		if latest == nil || latest.pid == t.pid && latest.epoch <= t.epoch {
			continue
		}
		c.res.Chain.FencedEnds++
		if effective[name] {
			c.res.add(Anomaly{Kind: FencedCommit, Value: name, Partition: -1, Offset: -1,
				Detail: fmt.Sprintf("chain transaction %s committed, ended by producer %d epoch %d at %v after producer %d epoch %d was initialized for its transactional id at %v",
					name, t.pid, t.epoch, t.sentAt, latest.pid, latest.epoch, latest.at)})
		}
	}
}

// checkCarried: a committed transaction carries, for every input
// partition it read, an offset past every input it transformed.
func (c *checker) checkCarried(txns map[string]*chainTxn, order []string, effective map[string]bool) {
	for _, name := range order {
		t := txns[name]
		if !effective[name] {
			continue
		}
		for _, in := range t.inputs {
			off, ok := t.offsets[in.partition]
			switch {
			case !ok:
				c.res.add(Anomaly{Kind: ChainOffset, Partition: in.partition, Offset: in.offset,
					Detail: fmt.Sprintf("committed chain transaction %s transformed input %s but carried no offset for partition %d", name, in, in.partition)})
			case off <= in.offset:
				c.res.add(Anomaly{Kind: ChainOffset, Partition: in.partition, Offset: in.offset,
					Detail: fmt.Sprintf("committed chain transaction %s transformed input %s but carried offset %d for partition %d", name, in, off, in.partition)})
			default:
				continue
			}
			break
		}
	}
}

// checkFinal compares the group's committed offsets after the run with
// the committed transactions, and the committed output with the
// committed input below them.
func (c *checker) checkFinal(h *History, txns map[string]*chainTxn, order []string, effective map[string]bool, final map[int32]int64, committedIn map[position]string) {
	st := c.res.Chain
	want := map[int32]int64{}
	carrier := map[int32]string{}
	for _, name := range order {
		if !effective[name] {
			continue
		}
		for p, off := range txns[name].offsets {
			if cur, ok := want[p]; !ok || off > cur {
				want[p], carrier[p] = off, name
			}
		}
	}
	got := func(p int32) int64 {
		if off, ok := final[p]; ok {
			return off
		}
		return -1
	}
	for p := range int32(h.Meta.Partitions) {
		w, ok := want[p]
		if !ok {
			w = -1
		}
		if g := got(p); g != w {
			why := "no committed transaction carried an offset for it"
			if ok {
				why = fmt.Sprintf("the last committed transaction to carry one, %s, carried %d", carrier[p], w)
			}
			c.res.add(Anomaly{Kind: ChainOffset, Partition: p, Offset: g,
				Detail: fmt.Sprintf("the chain group's committed offset for input partition %d is %d after the run, but %s", p, g, why)})
		}
	}
	// The committed output, by the input it transforms. Outputs of
	// transactions that did not commit were judged above.
	transformed := map[position][]chainOutput{}
	for _, name := range order {
		if !effective[name] {
			continue
		}
		for _, v := range txns[name].outputs {
			o, ok := parseChainValue(v)
			if !ok {
				c.res.add(Anomaly{Kind: ChainPhantom, Value: v, Partition: -1, Offset: -1,
					Detail: fmt.Sprintf("output %s of %s does not name its input", v, name)})
				continue
			}
			transformed[o.input] = append(transformed[o.input], o)
		}
	}
	inputs := slices.SortedFunc(maps.Keys(transformed), comparePositions)
	for _, in := range inputs {
		outs := transformed[in]
		if len(outs) > 1 {
			names := make([]string, len(outs))
			for i, o := range outs {
				names[i] = o.txn
			}
			c.res.add(Anomaly{Kind: ChainDuplicate, Value: outs[0].value, Partition: in.partition, Offset: in.offset,
				Detail: fmt.Sprintf("input %s (%s) transformed by %d committed transactions: %s", in, outs[0].value, len(outs), strings.Join(names, ", "))})
		}
		if in.offset >= got(in.partition) {
			c.res.add(Anomaly{Kind: ChainOffset, Value: outs[0].value, Partition: in.partition, Offset: in.offset,
				Detail: fmt.Sprintf("committed output of %s transforms input %s, at or past the group's committed offset %d", outs[0].txn, in, got(in.partition))})
			continue
		}
		if !h.Meta.DrainComplete {
			continue // the input consumers' view is incomplete
		}
		switch v, ok := committedIn[in]; {
		case !ok:
			c.res.add(Anomaly{Kind: ChainPhantom, Value: outs[0].value, Partition: in.partition, Offset: in.offset,
				Detail: fmt.Sprintf("committed output of %s transforms input %s (%s), which read_committed consumers never delivered", outs[0].txn, in, outs[0].value)})
		case v != outs[0].value:
			c.res.add(Anomaly{Kind: ChainPhantom, Value: outs[0].value, Partition: in.partition, Offset: in.offset,
				Detail: fmt.Sprintf("committed output of %s transforms input %s as %s; read_committed consumers read %s there", outs[0].txn, in, outs[0].value, v)})
		}
	}
	if !h.Meta.DrainComplete {
		return
	}
	for _, in := range slices.SortedFunc(maps.Keys(committedIn), comparePositions) {
		if in.offset >= got(in.partition) {
			continue
		}
		st.Inputs++
		switch len(transformed[in]) {
		case 0:
			c.res.add(Anomaly{Kind: ChainLost, Value: committedIn[in], Partition: in.partition, Offset: in.offset,
				Detail: fmt.Sprintf("committed input %s (%s), below the group's committed offset %d, is in no committed output", in, committedIn[in], got(in.partition))})
		case 1:
			st.Transformed++
		}
	}
}

func comparePositions(a, b position) int {
	if a.partition != b.partition {
		return int(a.partition) - int(b.partition)
	}
	switch {
	case a.offset < b.offset:
		return -1
	case a.offset > b.offset:
		return 1
	}
	return 0
}
