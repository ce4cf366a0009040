package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/records"
)

// Simulated clients build kmsg requests and send them over the simulated
// network to the nodes' api handlers, as real clients do over TCP. They
// find leaders with Metadata requests and retry like a Kafka client:
// one request in flight per partition, the same batch on retry.

type client interface{ start() }

const (
	clientEndpointBase = 1000
	maxSendAttempts    = 8
	produceTimeout     = 2 * time.Second
)

// leaderCache is a client's view of partition leaders.
type leaderCache struct {
	c        *Cluster
	topic    string
	self     int32
	leaders  map[int32]int32
	inFlight bool
}

func (l *leaderCache) leader(part int32) (int32, bool) {
	id, ok := l.leaders[part]
	return id, ok && id >= 0
}

// refresh asks a random node for the topic's leaders.
func (l *leaderCache) refresh() {
	if l.inFlight {
		return
	}
	l.inFlight = true
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(l.topic)
	req.Topics = append(req.Topics, t)
	to := l.c.ids[l.c.s.rng.IntN(len(l.c.ids))]
	l.c.call(l.self, to, req, rpcTimeout, func(resp kmsg.Response, err error) {
		l.inFlight = false
		if err != nil {
			return
		}
		m := resp.(*kmsg.MetadataResponse)
		for _, t := range m.Topics {
			if t.ErrorCode != 0 {
				continue
			}
			for _, p := range t.Partitions {
				l.leaders[p.Partition] = p.Leader
			}
		}
	})
}

func (l *leaderCache) forget(part int32) { delete(l.leaders, part) }

// producerClient writes unique values, remembering what each send became.
type producerClient struct {
	c     *Cluster
	index int
	spec  ProducerSpec
	lc    *leaderCache
	pid   int64
	epoch int16
	init  bool
	seq   map[int32]int32
	busy  map[int32]bool
	count int
	// retryUntil, when set, replaces the attempt limit: the producer
	// retries a batch until this simulated time, as a Kafka producer
	// retries retriable errors until delivery.timeout.ms.
	retryUntil time.Duration
}

func (c *Cluster) startClients() {
	for i, spec := range c.opts.Producers {
		id := int32(clientEndpointBase + i)
		c.clients = append(c.clients, &producerClient{c: c, index: i, spec: spec, pid: -1,
			lc: &leaderCache{c: c, self: id, leaders: map[int32]int32{}, topic: topicName}, seq: map[int32]int32{}, busy: map[int32]bool{}})
	}
	for i := range c.opts.Consumers {
		id := int32(clientEndpointBase + 100 + i)
		c.clients = append(c.clients, &consumerClient{c: c, index: i,
			lc: &leaderCache{c: c, self: id, leaders: map[int32]int32{}, topic: topicName}, next: map[int32]int64{}, busy: map[int32]bool{}})
	}
	if c.opts.Groups {
		id := int32(clientEndpointBase + 200)
		c.clients = append(c.clients, &offsetCommitter{c: c,
			lc: &leaderCache{c: c, self: id, leaders: map[int32]int32{}, topic: offsetsTopic}, next: map[int32]int64{}})
		c.clients = append(c.clients, c.newGroupMembers()...)
	}
	if c.opts.Transactions {
		c.startTxnClients()
	}
	if c.opts.ACLs {
		c.clients = append(c.clients, &aclToggler{c: c}, &aclProber{c: c,
			lc: &leaderCache{c: c, self: aclProbeEndpoint + 1, leaders: map[int32]int32{}, topic: topicName}})
	}
	if c.opts.TxnCoordinator {
		c.clients = append(c.clients, c.newTxnClients()...)
		c.clients = append(c.clients, c.newChainClients()...)
		if !c.opts.Transactions {
			c.clients = append(c.clients, c.newTxnReader())
		}
	}
	for _, cl := range c.clients {
		cl.start()
	}
}

func (pc *producerClient) start() { pc.c.s.after(pc.c.s.between(time.Second, 2*time.Second), pc.loop) }

func (pc *producerClient) loop() {
	c := pc.c
	if c.stopped || c.healed {
		return
	}
	c.s.after(c.s.between(5*time.Millisecond, 60*time.Millisecond), pc.loop)
	if pc.spec.Idempotent && pc.pid < 0 {
		pc.initProducer()
		return
	}
	part := int32(c.s.rng.IntN(c.opts.Partitions))
	if pc.busy[part] {
		return
	}
	if _, ok := pc.lc.leader(part); !ok {
		pc.lc.refresh()
		return
	}
	n := 1 + c.s.rng.IntN(3)
	values := make([][]byte, n)
	var recs []*sentRecord
	for i := range values {
		pc.count++
		v := fmt.Sprintf("p%d-%d", pc.index, pc.count)
		values[i] = []byte(v)
		recs = append(recs, c.check.sent(v, part, pc.spec))
	}
	var b []byte
	if pc.spec.Idempotent {
		b = batch.BuildProducer(values, c.nowMs(), pc.pid, pc.epoch, pc.seq[part])
		pc.seq[part] += int32(n)
	} else {
		b = batch.Build(values, c.nowMs())
	}
	pc.busy[part] = true
	pc.send(part, b, recs, 1, pc.pid)
}

func (pc *producerClient) initProducer() {
	if pc.init {
		return
	}
	pc.init = true
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.TransactionTimeoutMillis = 60000
	to := pc.c.ids[pc.c.s.rng.IntN(len(pc.c.ids))]
	pc.c.call(pc.lc.self, to, req, rpcTimeout, func(resp kmsg.Response, err error) {
		pc.init = false
		if err != nil {
			return
		}
		r := resp.(*kmsg.InitProducerIDResponse)
		if r.ErrorCode == 0 {
			pc.pid, pc.epoch = r.ProducerID, r.ProducerEpoch
			clear(pc.seq)
			pc.c.tracef("producer %d has producer id %d", pc.index, pc.pid)
		}
	})
}

func (pc *producerClient) send(part int32, b []byte, recs []*sentRecord, attempt int, pid int64) {
	c := pc.c
	leader, ok := pc.lc.leader(part)
	if !ok {
		pc.lc.refresh()
		pc.retry(part, b, recs, attempt, pid, errors.New("no leader known"))
		return
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = pc.spec.Acks
	req.TimeoutMillis = int32(produceTimeout.Milliseconds())
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topicName
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = part
	p.Records = b
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	if pc.spec.Acks == 0 {
		c.call(pc.lc.self, leader, req, rpcTimeout, func(kmsg.Response, error) {})
		pc.busy[part] = false
		return
	}
	c.call(pc.lc.self, leader, req, produceTimeout+rpcTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			r := resp.(*kmsg.ProduceResponse)
			if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
				c.violation("malformed produce answer %+v", r)
				return
			}
			rp := r.Topics[0].Partitions[0]
			if err = kerr.ErrorForCode(rp.ErrorCode); err == nil {
				pc.busy[part] = false
				c.check.acked(recs, rp.BaseOffset, leader)
				return
			}
		}
		pc.lc.forget(part)
		pc.retry(part, b, recs, attempt, pid, err)
	})
}

func (pc *producerClient) retry(part int32, b []byte, recs []*sentRecord, attempt int, pid int64, err error) {
	c := pc.c
	outOfTries := attempt >= maxSendAttempts
	if pc.retryUntil > 0 {
		outOfTries = c.s.now >= pc.retryUntil
	}
	if outOfTries || errors.Is(err, kerr.OutOfOrderSequenceNumber) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.UnknownProducerID) || pid != pc.pid {
		// Give up on this batch; its fate is unknown. An idempotent
		// producer starts a new producer id, as a client that cannot
		// tell whether a batch landed must.
		c.tracef("producer %d gives up on %s after %d attempts: %v", pc.index, recs[0].value, attempt, err)
		pc.busy[part] = false
		if pc.spec.Idempotent && pid == pc.pid {
			pc.pid = -1
		}
		return
	}
	c.s.after(c.s.between(20*time.Millisecond, 200*time.Millisecond), func() {
		pc.send(part, b, recs, attempt+1, pid)
	})
}

// consumerClient reads every partition from the start, below the high
// watermark, and reports each record it sees to the checker.
type consumerClient struct {
	c     *Cluster
	index int
	lc    *leaderCache
	next  map[int32]int64
	busy  map[int32]bool
}

func (cc *consumerClient) start() { cc.c.s.after(cc.c.s.between(time.Second, 2*time.Second), cc.loop) }

func (cc *consumerClient) loop() {
	c := cc.c
	if c.stopped {
		return
	}
	c.s.after(c.s.between(10*time.Millisecond, 100*time.Millisecond), cc.loop)
	part := int32(c.s.rng.IntN(c.opts.Partitions))
	if cc.busy[part] {
		return
	}
	leader, ok := cc.lc.leader(part)
	if !ok {
		cc.lc.refresh()
		return
	}
	req := consumerFetch(part, cc.next[part])
	cc.busy[part] = true
	from := cc.next[part]
	c.call(cc.lc.self, leader, req, rpcTimeout, func(resp kmsg.Response, err error) {
		cc.busy[part] = false
		if err != nil {
			cc.lc.forget(part)
			return
		}
		r := resp.(*kmsg.FetchResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return
		}
		rp := r.Topics[0].Partitions[0]
		if rp.ErrorCode != 0 {
			if rp.ErrorCode == kerr.OffsetOutOfRange.Code {
				c.check.consumerOutOfRange(part, from, leader)
			}
			cc.lc.forget(part)
			return
		}
		if cc.next[part] != from {
			return
		}
		cc.consume(part, rp.RecordBatches, leader)
	})
}

func (cc *consumerClient) consume(part int32, data []byte, leader int32) {
	c := cc.c
	err := batch.Split(data, func(b []byte) error {
		h, recs, err := records.Decode(b, 1<<20)
		if err != nil {
			return err
		}
		if h.BaseOffset > cc.next[part] {
			c.violation("consumer %d: partition %d from n%d skips offsets %d..%d", cc.index, part, leader, cc.next[part], h.BaseOffset-1)
			return errors.New("gap")
		}
		for _, r := range recs {
			off := r.Offset(h)
			if off < cc.next[part] {
				continue
			}
			if off != cc.next[part] {
				c.violation("consumer %d: partition %d from n%d: offset %d follows %d", cc.index, part, leader, off, cc.next[part]-1)
				return errors.New("gap")
			}
			c.check.consumed(part, off, string(r.Value), leader)
			cc.next[part] = off + 1
		}
		return nil
	})
	if err != nil && !errors.Is(err, batch.ErrTruncated) && !c.stopped {
		c.violation("consumer %d: partition %d from n%d: bad batch: %v", cc.index, part, leader, err)
	}
}

// consumerFetch is a consumer's Fetch of one partition of the simulated
// topic from offset, as the simulated consumers and group members send it.
func consumerFetch(part int32, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = -1
	req.MaxWaitMillis = 100
	req.MinBytes = 1
	req.MaxBytes = 64 << 10
	req.SessionEpoch = -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic = topicName
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition = part
	fp.FetchOffset = offset
	fp.CurrentLeaderEpoch = -1
	fp.LastFetchedEpoch = -1
	fp.PartitionMaxBytes = 16 << 10
	t.Partitions = append(t.Partitions, fp)
	req.Topics = append(req.Topics, t)
	return req
}
