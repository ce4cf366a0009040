package replica

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/replication"
)

// MaxISRBatch bounds the partitions of one AlterPartition request (and so
// of the metadata entry the controller commits for it): about 100 bytes
// each, a few hundred KiB at most. More pending wait for the next request.
const MaxISRBatch = 2000

// ISRBatcher gathers the ISR changes a broker's partition leaders propose
// into AlterPartition requests, as Kafka's AlterPartitionManager does: one
// request carries every change pending, and one request is in flight at a
// time. With thousands of partitions a request (and a controller commit)
// per change queued thousands of round trips, which timed out and were
// resent faster than the controller could commit them. K identifies a
// partition replica in the wrapper (node's *partition, the simulator's
// *replica).
//
// It is a core: no lock, no clock, no I/O. The wrapper calls Add when a
// replica core proposes (Ready.Propose), sends the request Next returns,
// and reports its answer with Answered, handing each outcome to its
// replica core's OnISRAnswer; then it asks Next again.
type ISRBatcher[K comparable] struct {
	pending  []isrItem[K]
	index    map[K]int // position in pending
	inflight []isrItem[K]
	sending  bool
}

type isrItem[K comparable] struct {
	key       K
	topic     metadata.TopicID
	partition int32
	change    replication.ISRChange
}

// ISROutcome is one change's outcome, for its replica core's OnISRAnswer.
type ISROutcome[K comparable] struct {
	Key    K
	Change replication.ISRChange
	Err    error
}

// Add queues change for partition key (topic, partition). A change still
// queued for the same partition is replaced: the replica core proposes
// again only after settling its previous proposal.
func (b *ISRBatcher[K]) Add(key K, topic metadata.TopicID, partition int32, change replication.ISRChange) {
	it := isrItem[K]{key, topic, partition, change}
	if i, ok := b.index[key]; ok {
		b.pending[i] = it
		return
	}
	if b.index == nil {
		b.index = map[K]int{}
	}
	b.index[key] = len(b.pending)
	b.pending = append(b.pending, it)
}

// Pending is the number of changes queued and not yet sent.
func (b *ISRBatcher[K]) Pending() int { return len(b.pending) }

// Next returns the request to send for broker brokerID in its
// registration brokerEpoch, carrying up to MaxISRBatch queued changes in
// the order they were queued (topics grouped in the order they first
// appear); nil while a request is in flight or nothing is queued.
func (b *ISRBatcher[K]) Next(brokerID int32, brokerEpoch int64) *kmsg.AlterPartitionRequest {
	if b.sending || len(b.pending) == 0 {
		return nil
	}
	n := min(len(b.pending), MaxISRBatch)
	b.inflight = append(b.inflight[:0], b.pending[:n]...)
	b.pending = append(b.pending[:0], b.pending[n:]...)
	clear(b.index)
	for i, it := range b.pending {
		b.index[it.key] = i
	}
	b.sending = true
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 2
	req.BrokerID = brokerID
	req.BrokerEpoch = brokerEpoch
	topics := map[metadata.TopicID]int{}
	for _, it := range b.inflight {
		ti, ok := topics[it.topic]
		if !ok {
			ti = len(req.Topics)
			topics[it.topic] = ti
			rt := kmsg.NewAlterPartitionRequestTopic()
			rt.TopicID = it.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition = it.partition
		rp.LeaderEpoch = it.change.LeaderEpoch
		rp.PartitionEpoch = it.change.PartitionEpoch
		rp.NewISR = it.change.NewISR
		req.Topics[ti].Partitions = append(req.Topics[ti].Partitions, rp)
	}
	return req
}

// Answered takes the outcome of the request in flight: resp its answer,
// or err the request's failure (then every change's fate is unknown). A
// change the answer does not mention is unknown too. It returns each
// change sent with its outcome; the next request may then go.
func (b *ISRBatcher[K]) Answered(resp *kmsg.AlterPartitionResponse, err error) []ISROutcome[K] {
	if !b.sending {
		return nil
	}
	b.sending = false
	sent := b.inflight
	b.inflight = nil
	out := make([]ISROutcome[K], len(sent))
	if err == nil && resp != nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err == nil && resp == nil {
		err = fmt.Errorf("alter partition: no answer")
	}
	type tp struct {
		topic     metadata.TopicID
		partition int32
	}
	answers := map[tp]error{}
	if err == nil {
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				answers[tp{rt.TopidID, rp.Partition}] = kerr.ErrorForCode(rp.ErrorCode)
			}
		}
	}
	for i, it := range sent {
		o := ISROutcome[K]{Key: it.key, Change: it.change, Err: err}
		if err == nil {
			a, ok := answers[tp{it.topic, it.partition}]
			if !ok {
				a = fmt.Errorf("alter partition: the answer does not mention %s-%d", it.topic, it.partition)
			}
			o.Err = a
		}
		out[i] = o
	}
	return out
}
