package node

import (
	"fmt"

	"github.com/skein-log/skein/internal/batch"
)

// Seams for tests that must hold replication still or look at one
// replica's log directly (the Kafka protocol only ever shows the leader's).

// PauseReplicaFetching stops this broker's replica fetchers once their
// round in flight has ended: they neither truncate nor copy anything until
// ResumeReplicaFetching. The broker keeps heartbeating, so, as a follower
// stopped by SIGSTOP's replication half, it stays registered and in the
// ISRs until replica.lag.time.max.ms passes. For fault-injection tests.
func (b *Broker) PauseReplicaFetching() { b.fetchers.pause() }

// ResumeReplicaFetching undoes PauseReplicaFetching.
func (b *Broker) ResumeReplicaFetching() { b.fetchers.resume() }

func (m *fetcherManager) pause() {
	m.mu.Lock()
	m.paused.Store(true)
	fs := make([]*replicaFetcher, 0, len(m.fetchers))
	for _, f := range m.fetchers {
		fs = append(fs, f)
	}
	m.mu.Unlock()
	for _, f := range fs {
		// Taking the lock waits for the round in flight; the next round
		// sees the flag and does nothing.
		f.roundMu.Lock()
		//lint:ignore SA2001 the empty critical section is the wait
		f.roundMu.Unlock()
	}
}

func (m *fetcherManager) resume() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.paused.Store(false)
	for _, f := range m.fetchers {
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
}

// BatchInfo is one batch of a replica's log as stored.
type BatchInfo struct {
	BaseOffset  int64
	LastOffset  int64
	LeaderEpoch int32
	CRC         uint32
}

// maxInspectBytes bounds one read of ReplicaBatches.
const maxInspectBytes = 1 << 20

// ReplicaBatches lists the batches of this broker's replica of a
// partition, from its log start to its log end (not only below the high
// watermark), with each batch's leader epoch and CRC.
func (b *Broker) ReplicaBatches(topic string, partition int32) ([]BatchInfo, error) {
	t, ok := b.Image().Topic(topic)
	if !ok {
		return nil, fmt.Errorf("no topic %s", topic)
	}
	p := b.partition(t.ID, partition)
	if p == nil {
		return nil, fmt.Errorf("broker %d holds no replica of %s-%d", b.cfg.NodeID, topic, partition)
	}
	var out []BatchInfo
	for next, end := p.log.LogStartOffset(), p.log.LogEndOffset(); next < end; {
		data, err := p.log.Read(next, maxInspectBytes, end, true)
		if err != nil {
			return nil, fmt.Errorf("read %s at %d: %w", p.name(), next, err)
		}
		if len(data) == 0 {
			break // compaction removed the rest (the active segment is empty)
		}
		err = batch.Split(data, func(one []byte) error {
			h, err := batch.ParseHeader(one)
			if err != nil {
				return err
			}
			out = append(out, BatchInfo{BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), LeaderEpoch: h.LeaderEpoch, CRC: h.CRC})
			next = h.LastOffset() + 1
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("parse %s at %d: %w", p.name(), next, err)
		}
	}
	return out, nil
}

// LeaderISR reports the ISR this broker's leader state for topic-partition
// works with (ok is false when it does not lead it). The image can name a
// new ISR a moment before the partition's leader state applies it; tests
// that need the leader itself to act on an ISR change wait on this.
func (b *Broker) LeaderISR(topic string, partition int32) (isr []int32, ok bool) {
	t, found := b.Image().Topic(topic)
	if !found {
		return nil, false
	}
	p := b.partition(t.ID, partition)
	if p == nil {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	snap, ok := p.core.LeaderSnapshot()
	return snap.ISR, ok
}
