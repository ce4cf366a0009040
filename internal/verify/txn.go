package verify

import (
	"fmt"
	"slices"
)

// txnOutcome is what became of a transaction, as far as its producer
// knows.
type txnOutcome int

const (
	// txnAborted: asked to abort, or never asked to commit (the producer
	// gave up on it, or the run ended first): it cannot have committed.
	txnAborted txnOutcome = iota
	txnCommitted
	txnUnknown // a commit that errored
)

// txnInfo is one transaction's records, in the order sent, and outcome.
type txnInfo struct {
	name    string
	values  []string
	outcome txnOutcome
}

// CheckTxn judges a history of the txn workload: transactional producers
// and read_committed consumers (assigned every partition, from the
// start). Every record of a committed transaction must be read by every
// consumer exactly once; no record of an aborted transaction ever; of a
// transaction with an unknown outcome, each consumer reads all records or
// none, and all consumers agree. Reads of a partition go up in offset
// order (gaps are expected: markers and aborted records are skipped), one
// offset holds one value (acknowledged offsets included), one value sits
// at one offset, and nothing is read that was not sent. With a
// consume-transform-produce chain (Meta.Transformers), checkChain judges
// it too.
func CheckTxn(h *History) *Result {
	c := &checker{
		res:       newResult(Meta{Acks: AcksAll, Idempotent: true}), // transactions tolerate nothing
		sends:     map[string]sendInfo{},
		failed:    map[string]bool{},
		atOffset:  map[position][]observation{},
		offsetsOf: map[string][]position{},
		readSet:   map[string]bool{},
		lastRead:  map[consumerPartition]int64{},
	}
	c.res.kinds = TxnKinds
	txns := map[string]*txnInfo{}
	var order []string // transactions in the order first seen
	txnOf := func(name string) *txnInfo {
		t, ok := txns[name]
		if !ok {
			t = &txnInfo{name: name}
			txns[name] = t
			order = append(order, name)
		}
		return t
	}
	readBy := map[int]map[string]int{} // consumer -> value -> reads
	for i := range h.Events {
		e := &h.Events[i]
		switch e.Type {
		case EventSend:
			_, dup := c.sends[e.Value]
			c.index(e)
			if !dup && e.Txn != "" {
				t := txnOf(e.Txn)
				t.values = append(t.values, e.Value)
			}
		case EventAck:
			c.res.Acked++
			if e.Offset >= 0 {
				// An acknowledged offset holds the record whatever became
				// of its transaction; no read may find another value there.
				c.observe(position{e.Partition, e.Offset}, e.Value, "ack")
			}
		case EventFail:
			c.index(e)
		case EventTxnEnd:
			t := txnOf(e.Txn)
			switch {
			case e.Note != "commit":
				t.outcome = txnAborted
			case e.Err == "":
				t.outcome = txnCommitted
			default:
				t.outcome = txnUnknown
			}
		case EventRead:
			c.res.Reads++
			c.txnRead(e)
			if readBy[e.Consumer] == nil {
				readBy[e.Consumer] = map[string]int{}
			}
			readBy[e.Consumer][e.Value]++
		}
	}
	consumers := make([]int, 0, h.Meta.Consumers)
	for id := 1; id <= h.Meta.Consumers; id++ {
		consumers = append(consumers, id)
	}
	for _, name := range order {
		c.checkTxn(txns[name], consumers, readBy)
	}
	if h.Meta.Transformers > 0 {
		c.res.kinds = append(slices.Clone(TxnKinds), ChainKinds...)
		c.checkChain(h)
	}
	for _, id := range consumers {
		values := make([]string, 0, len(readBy[id]))
		for v, n := range readBy[id] {
			if n > 1 {
				values = append(values, v)
			}
		}
		slices.Sort(values)
		for _, v := range values {
			s := c.sends[v]
			c.res.add(Anomaly{Kind: ReadTwice, Value: v, Partition: s.partition, Consumer: id,
				Detail: fmt.Sprintf("consumer %d read %s %d times", id, v, readBy[id][v])})
		}
	}
	return c.finish()
}

// txnRead indexes one read_committed read and checks that the consumer
// goes up through the partition's offsets.
func (c *checker) txnRead(e *Event) {
	at := position{e.Partition, e.Offset}
	c.observe(at, e.Value, fmt.Sprintf("consumer %d", e.Consumer))
	c.readSet[e.Value] = true
	c.stepRead(e) // gaps are expected: markers and aborted records
}

// checkTxn judges one transaction against what each consumer read.
func (c *checker) checkTxn(t *txnInfo, consumers []int, readBy map[int]map[string]int) {
	switch t.outcome {
	case txnCommitted:
		c.res.TxnCommitted++
	case txnAborted:
		c.res.TxnAborted++
	case txnUnknown:
		c.res.TxnUnknown++
	}
	whole := 0 // consumers that read every record
	var counts []string
	for _, id := range consumers {
		var read, missing []string
		for _, v := range t.values {
			if readBy[id][v] > 0 {
				read = append(read, v)
			} else {
				missing = append(missing, v)
			}
		}
		if len(missing) == 0 {
			whole++
		}
		counts = append(counts, fmt.Sprintf("consumer %d read %d", id, len(read)))
		switch t.outcome {
		case txnCommitted:
			for _, v := range missing {
				s := c.sends[v]
				c.res.add(Anomaly{Kind: TxnLost, Value: v, Partition: s.partition, Offset: -1, Consumer: id,
					Detail: fmt.Sprintf("%s of committed transaction %s never read by consumer %d", v, t.name, id)})
			}
		case txnAborted:
			for _, v := range read {
				at := c.offsetsOf[v][0]
				c.res.add(Anomaly{Kind: AbortedRead, Value: v, Partition: at.partition, Offset: at.offset, Consumer: id,
					Detail: fmt.Sprintf("%s of aborted transaction %s read by consumer %d at %s", v, t.name, id, at)})
			}
		}
	}
	if t.outcome != txnUnknown || len(t.values) == 0 {
		return
	}
	switch whole {
	case len(consumers):
		c.res.TxnUnknownCommitted++
		return
	case 0:
		if !slices.ContainsFunc(consumers, func(id int) bool {
			return slices.ContainsFunc(t.values, func(v string) bool { return readBy[id][v] > 0 })
		}) {
			return // read by none: aborted
		}
	}
	s := c.sends[t.values[0]]
	c.res.add(Anomaly{Kind: TxnPartial, Value: t.values[0], Partition: s.partition, Offset: -1,
		Detail: fmt.Sprintf("transaction %s (unknown outcome, %d records) read in part: %v", t.name, len(t.values), counts)})
}
