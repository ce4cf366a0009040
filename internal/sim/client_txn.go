package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/records"
)

// The partition side of transactions under faults (Options.Transactions):
// txnDriver plays a transactional producer together with its
// coordinator's marker writes (the coordinator itself, over
// __transaction_state, is not simulated here): it writes a transaction's
// transactional batches to some partitions, decides to commit or abort,
// and sends WriteTxnMarkers to every partition's leader until each is
// answered. txnReader is a read_committed consumer that drops aborted
// records as Kafka's consumer does, from the answer's aborted
// transactions. The checker: a read_committed read never delivers a
// record of a transaction that was aborted or not yet decided (the last
// stable offset never passed it).

const (
	txnDriverEndpoint = clientEndpointBase + 400
	txnReaderEndpoint = clientEndpointBase + 401
)

type txnDriver struct {
	c      *Cluster
	lc     *leaderCache
	pid    int64
	epoch  int16
	init   bool
	seq    map[int32]int32
	n      int  // transactions begun
	active bool // a transaction is being written or ended
}

// txnChecks are the transaction outcomes the driver decided, by
// transaction name, and the transaction of every record it sent.
type txnChecks struct {
	decided  map[string]bool // true: commit
	txnOf    map[string]string
	ended    int64
	aborted  int64
	readRecs int64
}

func (c *Cluster) startTxnClients() {
	c.check.txns = txnChecks{decided: map[string]bool{}, txnOf: map[string]string{}}
	d := &txnDriver{c: c, pid: -1, seq: map[int32]int32{},
		lc: &leaderCache{c: c, self: txnDriverEndpoint, leaders: map[int32]int32{}, topic: topicName}}
	c.clients = append(c.clients, d, c.newTxnReader())
}

func (c *Cluster) newTxnReader() *txnReader {
	r := &txnReader{c: c, next: map[int32]int64{}, busy: map[int32]bool{}, got: map[string]bool{},
		lc: &leaderCache{c: c, self: txnReaderEndpoint, leaders: map[int32]int32{}, topic: topicName}}
	c.check.txnCoord.reader = r
	return r
}

func (d *txnDriver) start() { d.c.s.after(d.c.s.between(time.Second, 2*time.Second), d.loop) }

func (d *txnDriver) loop() {
	c := d.c
	if c.stopped || c.healed {
		return
	}
	c.s.after(c.s.between(20*time.Millisecond, 100*time.Millisecond), d.loop)
	switch {
	case d.active:
	case d.pid < 0:
		d.initProducer()
	default:
		d.begin()
	}
}

func (d *txnDriver) initProducer() {
	if d.init {
		return
	}
	d.init = true
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.TransactionTimeoutMillis = 60000
	to := d.c.ids[d.c.s.rng.IntN(len(d.c.ids))]
	d.c.call(d.lc.self, to, req, rpcTimeout, func(resp kmsg.Response, err error) {
		d.init = false
		if err == nil && resp.(*kmsg.InitProducerIDResponse).ErrorCode == 0 {
			r := resp.(*kmsg.InitProducerIDResponse)
			d.pid, d.epoch = r.ProducerID, r.ProducerEpoch
			clear(d.seq)
		}
	})
}

// begin writes one transaction: a transactional batch to each of some
// partitions, then the outcome.
func (d *txnDriver) begin() {
	c := d.c
	d.n++
	d.active = true
	name := fmt.Sprintf("x%d", d.n)
	parts := []int32{}
	for p := range int32(c.opts.Partitions) {
		if c.s.chance(0.7) {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		parts = append(parts, int32(c.s.rng.IntN(c.opts.Partitions)))
	}
	pid := d.pid
	left, allAcked := len(parts), true
	for _, p := range parts {
		count := 1 + c.s.rng.IntN(3)
		values := make([][]byte, count)
		for i := range values {
			v := fmt.Sprintf("%s-%d-%d", name, p, i)
			values[i] = []byte(v)
			c.check.txns.txnOf[v] = name
		}
		b := batch.BuildTransactional(values, c.nowMs(), pid, d.epoch, d.seq[p])
		d.seq[p] += int32(count)
		d.produce(p, b, 1, func(ok bool) {
			allAcked = allAcked && ok
			if left--; left == 0 {
				d.end(name, pid, parts, allAcked && c.s.chance(0.6), allAcked)
			}
		})
	}
}

// produce sends one transactional batch, retrying as the simulated
// idempotent producer does; done(false) when it gave up (the batch's fate
// is unknown: the transaction is aborted).
func (d *txnDriver) produce(part int32, b []byte, attempt int, done func(bool)) {
	sendTxnBatch(d.c, d.lc, "sim-txn", part, b, attempt, done)
}

// sendTxnBatch sends one transactional batch of the producer of txnID to
// the partition's leader, retrying up to maxSendAttempts times (through
// lc, whose endpoint it sends from); done(false) when it gave up or the
// sequence was refused.
func sendTxnBatch(c *Cluster, lc *leaderCache, txnID string, part int32, b []byte, attempt int, done func(bool)) {
	sendTxnBatchAt(c, lc, txnID, part, b, 9, attempt, done)
}

// sendTxnBatchAt is sendTxnBatch with Produce of version (v12+: a
// transaction version 2 client's, whose partition the leader adds to the
// transaction).
func sendTxnBatchAt(c *Cluster, lc *leaderCache, txnID string, part int32, b []byte, version int16, attempt int, done func(bool)) {
	retry := func() {
		if attempt >= maxSendAttempts || c.stopped {
			done(false)
			return
		}
		c.s.after(c.s.between(20*time.Millisecond, 200*time.Millisecond), func() { sendTxnBatchAt(c, lc, txnID, part, b, version, attempt+1, done) })
	}
	leader, ok := lc.leader(part)
	if !ok {
		lc.refresh()
		retry()
		return
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = -1
	req.TransactionID = kmsg.StringPtr(txnID)
	req.TimeoutMillis = int32(produceTimeout.Milliseconds())
	t := kmsg.NewProduceRequestTopic()
	t.Topic = lc.topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition, p.Records = part, b
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	c.call(lc.self, leader, req, produceTimeout+rpcTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
			if err = kerr.ErrorForCode(code); err == nil {
				done(true)
				return
			}
			if errors.Is(err, kerr.OutOfOrderSequenceNumber) {
				done(false)
				return
			}
		}
		lc.forget(part)
		retry()
	})
}

// end records the decision, then writes the marker on every partition of
// the transaction until each leader has it committed. A transaction with
// a batch of unknown fate is aborted and the producer id replaced, as a
// producer that cannot tell what landed must.
func (d *txnDriver) end(name string, pid int64, parts []int32, commit, clean bool) {
	c := d.c
	c.check.txns.decided[name] = commit
	c.tracef("transaction %s of producer %d: commit=%v on partitions %v", name, pid, commit, parts)
	left := len(parts)
	for _, p := range parts {
		d.marker(p, pid, commit, func() {
			if left--; left == 0 {
				c.check.txns.ended++
				if !commit {
					c.check.txns.aborted++
				}
				d.active = false
				if !clean {
					d.pid = -1
				}
			}
		})
	}
}

func (d *txnDriver) marker(part int32, pid int64, commit bool, done func()) {
	c := d.c
	if c.stopped {
		return
	}
	again := func() {
		c.s.after(c.s.between(50*time.Millisecond, 200*time.Millisecond), func() { d.marker(part, pid, commit, done) })
	}
	leader, ok := d.lc.leader(part)
	if !ok {
		d.lc.refresh()
		again()
		return
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = pid, d.epoch, commit
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topicName, []int32{part}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	c.call(d.lc.self, leader, req, 30*time.Second+rpcTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			r := resp.(*kmsg.WriteTxnMarkersResponse)
			if err = kerr.ErrorForCode(r.Markers[0].Topics[0].Partitions[0].ErrorCode); err == nil {
				done()
				return
			}
		}
		d.lc.forget(part)
		again()
	})
}

// txnReader reads every partition from the start with read_committed.
type txnReader struct {
	c    *Cluster
	lc   *leaderCache
	next map[int32]int64
	busy map[int32]bool
	got  map[string]bool // the values delivered
}

func (r *txnReader) start() { r.c.s.after(r.c.s.between(time.Second, 2*time.Second), r.loop) }

func (r *txnReader) loop() {
	c := r.c
	if c.stopped {
		return
	}
	c.s.after(c.s.between(10*time.Millisecond, 100*time.Millisecond), r.loop)
	part := int32(c.s.rng.IntN(c.opts.Partitions))
	if r.busy[part] {
		return
	}
	leader, ok := r.lc.leader(part)
	if !ok {
		r.lc.refresh()
		return
	}
	req := consumerFetch(part, r.next[part])
	req.IsolationLevel = 1
	r.busy[part] = true
	from := r.next[part]
	c.call(r.lc.self, leader, req, rpcTimeout, func(resp kmsg.Response, err error) {
		r.busy[part] = false
		if err != nil {
			r.lc.forget(part)
			return
		}
		fr := resp.(*kmsg.FetchResponse)
		if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
			return
		}
		rp := fr.Topics[0].Partitions[0]
		if rp.ErrorCode != 0 || r.next[part] != from {
			r.lc.forget(part)
			return
		}
		if rp.LastStableOffset > rp.HighWatermark {
			c.violation("read_committed fetch of partition %d from n%d: last stable offset %d above high watermark %d", part, leader, rp.LastStableOffset, rp.HighWatermark)
		}
		r.consume(part, rp, leader)
	})
}

// consume delivers what a Kafka read_committed consumer would
// (readCommittedBatches).
func (r *txnReader) consume(part int32, rp kmsg.FetchResponseTopicPartition, leader int32) {
	c := r.c
	err := readCommittedBatches(rp, r.next[part], func(h batch.Header, recs []records.Record, deliver bool) error {
		if h.BaseOffset >= rp.LastStableOffset {
			c.violation("read_committed fetch of partition %d from n%d returned a batch at %d, at or past its last stable offset %d", part, leader, h.BaseOffset, rp.LastStableOffset)
			return errors.New("past the LSO")
		}
		r.next[part] = h.LastOffset() + 1
		if !deliver {
			return nil
		}
		if h.IsTransactional() && c.opts.txnReaderSkipsLast {
			recs = recs[:len(recs)-1]
		}
		for _, rec := range recs {
			r.delivered(part, rec.Offset(h), string(rec.Value), leader)
		}
		return nil
	})
	if err != nil && !errors.Is(err, batch.ErrTruncated) && !c.stopped && !strings.Contains(err.Error(), "LSO") {
		c.violation("read_committed reader: partition %d from n%d: bad batch: %v", part, leader, err)
	}
}

// readCommittedBatches walks a read_committed fetch answer's batches
// that end at or past from as Kafka's consumer does: a batch of an
// aborted transaction (from the answer's list to its producer's ABORT
// marker) and a control batch are visited with deliver false. An error
// from visit stops the walk and is returned.
func readCommittedBatches(rp kmsg.FetchResponseTopicPartition, from int64, visit func(h batch.Header, recs []records.Record, deliver bool) error) error {
	abortedList := slices.Clone(rp.AbortedTransactions)
	slices.SortFunc(abortedList, func(a, b kmsg.FetchResponseTopicPartitionAbortedTransaction) int {
		return int(a.FirstOffset - b.FirstOffset)
	})
	abortedProducers := map[int64]bool{}
	return batch.Split(rp.RecordBatches, func(b []byte) error {
		h, recs, err := records.Decode(b, 1<<20)
		if err != nil {
			return err
		}
		if h.LastOffset() < from {
			return nil
		}
		for len(abortedList) > 0 && abortedList[0].FirstOffset <= h.LastOffset() {
			abortedProducers[abortedList[0].ProducerID] = true
			abortedList = abortedList[1:]
		}
		switch {
		case h.IsControl():
			if m, err := batch.ParseMarker(b); err == nil && !m.Commit {
				delete(abortedProducers, h.ProducerID)
			}
			return visit(h, recs, false)
		case h.IsTransactional() && abortedProducers[h.ProducerID]:
			return visit(h, recs, false)
		}
		return visit(h, recs, true)
	})
}

// delivered checks one record a read_committed reader hands on: one of
// the driver's must belong to a committed transaction.
func (r *txnReader) delivered(part int32, off int64, v string, leader int32) {
	k := r.c.check
	r.got[v] = true
	k.txnCoordDelivered(v, part, off, leader)
	name, ok := k.txns.txnOf[v]
	if !ok {
		return // not transactional
	}
	k.txns.readRecs++
	commit, decided := k.txns.decided[name]
	switch {
	case !decided:
		r.c.violation("read_committed delivered %s (partition %d offset %d, from n%d) of transaction %s, not yet decided", v, part, off, leader, name)
	case !commit && k.strict():
		r.c.violation("read_committed delivered %s (partition %d offset %d, from n%d) of aborted transaction %s", v, part, off, leader, name)
	}
}
