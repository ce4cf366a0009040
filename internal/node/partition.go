package node

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/producer"
	"github.com/skein-log/skein/internal/storage"
)

// maxProducersPerPartition bounds the idempotent-producer table of one
// partition (a few hundred bytes per producer).
const maxProducersPerPartition = 100_000

// partition is the runtime of one partition replica on this broker: its
// log, its idempotent-producer table, the produce requests waiting for
// their acknowledgement and the fetches waiting for data.
//
// Locking: mu guards everything below it. The log has its own lock and is
// safe to read without mu; appends happen under mu so that the producer
// table and the log never disagree. Sync runs without mu (group commit).
type partition struct {
	b     *Broker
	topic string
	id    metadata.TopicID
	index int32
	log   *storage.Log

	// highWatermark is readable without mu: consumers read below it.
	highWatermark atomic.Int64

	mu          sync.Mutex
	cfg         config.TopicConfig
	leaderEpoch int32
	producers   *producer.Table
	ackWaiters  []*ackWaiter
	watchers    map[*fetchWaiter]struct{}
	// failed is set when the log can no longer be trusted (an fsync
	// failed): every later produce fails with KAFKA_STORAGE_ERROR.
	failed error
	// unflushed counts messages appended since the last fsync, for
	// flush.messages when write.caching is on.
	unflushed  int64
	flushTimer *time.Timer
	closed     bool
}

// ackWaiter is a produce request waiting until its last offset is covered
// by the high watermark.
type ackWaiter struct {
	target int64 // needs highWatermark >= target
	result api.ProduceResult
	done   func(api.ProduceResult)
	timer  *time.Timer
	fired  bool
}

func openPartition(b *Broker, t *metadata.Topic, p metadata.Partition, cfg config.TopicConfig, dir string) (*partition, error) {
	log, err := storage.Open(b.fs, dir, storageConfig(cfg), storage.Options{Logger: b.log.With("partition", fmt.Sprintf("%s-%d", t.Name, p.Index))})
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	pt := &partition{
		b: b, topic: t.Name, id: t.ID, index: p.Index, log: log,
		cfg: cfg, leaderEpoch: p.LeaderEpoch,
		producers: producer.NewTable(maxProducersPerPartition),
		watchers:  map[*fetchWaiter]struct{}{},
	}
	// Everything recovered from disk is made durable before it is served:
	// after a kill -9 the page cache may hold bytes no fsync covered.
	durable, err := log.Sync()
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("sync recovered log %s: %w", dir, err)
	}
	if err := log.ScanHeaders(log.LogStartOffset(), func(h batch.Header) error {
		pt.producers.Apply(h)
		return nil
	}); err != nil {
		log.Close()
		return nil, fmt.Errorf("rebuild producer state of %s: %w", dir, err)
	}
	pt.highWatermark.Store(durable)
	return pt, nil
}

func storageConfig(cfg config.TopicConfig) storage.Config {
	return storage.Config{
		SegmentBytes:       int64(cfg.SegmentBytes),
		SegmentMs:          cfg.SegmentMs,
		RetentionBytes:     cfg.RetentionBytes,
		RetentionMs:        cfg.RetentionMs,
		IndexIntervalBytes: int(cfg.IndexIntervalBytes),
		MaxIndexBytes:      int(cfg.SegmentIndexBytes),
	}
}

func (p *partition) name() string { return fmt.Sprintf("%s-%d", p.topic, p.index) }

func (p *partition) setConfig(cfg config.TopicConfig) {
	p.mu.Lock()
	p.cfg = cfg
	p.mu.Unlock()
	p.log.SetConfig(storageConfig(cfg))
}

// produce appends the batches and arranges for done to be called when the
// acks the client asked for are satisfied.
func (p *partition) produce(req api.ProduceParams, done func(api.ProduceResult)) {
	now := time.Now()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		done(api.ProduceResult{Err: kerr.NotLeaderForPartition})
		return
	}
	if p.failed != nil {
		p.mu.Unlock()
		done(api.ProduceResult{Err: fmt.Errorf("%w: %v", kerr.KafkaStorageError, p.failed)})
		return
	}
	res := api.ProduceResult{BaseOffset: -1, LogAppendTime: -1}
	var target int64
	var appended int64
	for i, b := range req.Batches {
		h, err := batch.ParseHeader(b)
		if err != nil { // validated by the handler; a failure here is a bug
			p.mu.Unlock()
			done(api.ProduceResult{Err: fmt.Errorf("%w: %v", kerr.CorruptMessage, err)})
			return
		}
		dec, err := p.producers.Check(h)
		if err != nil {
			p.mu.Unlock()
			done(api.ProduceResult{Err: err})
			return
		}
		if dec.Action == producer.Duplicate {
			// A retry of a batch already in the log: answer with its
			// original offsets and write nothing.
			if i == 0 {
				res.BaseOffset = dec.Original.BaseOffset
			}
			target = max(target, dec.Original.LastOffset+1)
			continue
		}
		if p.cfg.MessageTimestampType == "LogAppendTime" {
			batch.SetLogAppendTime(b, now.UnixMilli())
			res.LogAppendTime = now.UnixMilli()
		}
		ar, err := p.log.Append(b, p.leaderEpoch, now.UnixMilli())
		if err != nil {
			p.mu.Unlock()
			p.b.log.Error("append failed", "partition", p.name(), "err", err)
			done(api.ProduceResult{Err: fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)})
			return
		}
		h.BaseOffset = ar.BaseOffset
		p.producers.Update(h)
		if i == 0 {
			res.BaseOffset = ar.BaseOffset
		}
		target = max(target, ar.LastOffset+1)
		appended += int64(h.RecordCount)
	}
	res.LogStartOffset = p.log.LogStartOffset()
	if appended > 0 {
		p.afterAppendLocked(appended)
	}
	if req.Acks == 0 || p.highWatermark.Load() >= target {
		p.mu.Unlock()
		done(res)
		return
	}
	w := &ackWaiter{target: target, result: res, done: done}
	p.ackWaiters = append(p.ackWaiters, w)
	w.timer = time.AfterFunc(req.Timeout, func() { p.expireAck(w) })
	p.mu.Unlock()
}

// afterAppendLocked decides how the new data becomes visible. With the
// default durable contract it waits for the group-committed fsync; with
// write.caching the high watermark moves now and fsync follows the topic's
// flush.messages / flush.ms.
func (p *partition) afterAppendLocked(messages int64) {
	if !p.cfg.WriteCaching {
		p.b.flusher.schedule(p)
		return
	}
	p.unflushed += messages
	p.advanceHighWatermarkLocked(p.log.LogEndOffset())
	if p.cfg.FlushMessages > 0 && p.unflushed >= p.cfg.FlushMessages {
		p.unflushed = 0
		p.b.flusher.schedule(p)
		return
	}
	if p.flushTimer == nil && p.cfg.FlushMs > 0 && p.cfg.FlushMs < int64(24*time.Hour/time.Millisecond) {
		p.flushTimer = time.AfterFunc(time.Duration(p.cfg.FlushMs)*time.Millisecond, func() {
			p.mu.Lock()
			p.flushTimer = nil
			p.unflushed = 0
			p.mu.Unlock()
			p.b.flusher.schedule(p)
		})
	}
}

// sync is called by the flusher: one fsync covers every batch appended
// before it started.
func (p *partition) sync() {
	durable, err := p.log.Sync()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if p.failed == nil {
			p.failed = err
			p.b.log.Error("fsync failed; partition refuses writes until restart", "partition", p.name(), "err", err)
		}
		p.failAcksLocked(fmt.Errorf("%w: %v", kerr.KafkaStorageError, err))
		return
	}
	if !p.cfg.WriteCaching {
		p.advanceHighWatermarkLocked(durable)
	}
}

// advanceHighWatermarkLocked moves the high watermark forward (never back),
// completes the produces it covers and wakes waiting fetches.
func (p *partition) advanceHighWatermarkLocked(hw int64) {
	if hw <= p.highWatermark.Load() {
		return
	}
	p.highWatermark.Store(hw)
	kept := p.ackWaiters[:0]
	var ready []*ackWaiter
	for _, w := range p.ackWaiters {
		if w.target <= hw {
			w.fired = true
			w.timer.Stop()
			ready = append(ready, w)
		} else {
			kept = append(kept, w)
		}
	}
	clear(p.ackWaiters[len(kept):])
	p.ackWaiters = kept
	for _, w := range ready {
		go w.done(w.result) // completions must not run under mu
	}
	for fw := range p.watchers {
		fw.poke()
	}
}

func (p *partition) expireAck(w *ackWaiter) {
	p.mu.Lock()
	if w.fired {
		p.mu.Unlock()
		return
	}
	w.fired = true
	p.removeAckLocked(w)
	p.mu.Unlock()
	w.done(api.ProduceResult{Err: kerr.RequestTimedOut, BaseOffset: -1, LogAppendTime: -1})
}

func (p *partition) removeAckLocked(w *ackWaiter) {
	for i, x := range p.ackWaiters {
		if x == w {
			p.ackWaiters = append(p.ackWaiters[:i], p.ackWaiters[i+1:]...)
			return
		}
	}
}

func (p *partition) failAcksLocked(err error) {
	for _, w := range p.ackWaiters {
		w.fired = true
		w.timer.Stop()
		go w.done(api.ProduceResult{Err: err, BaseOffset: -1, LogAppendTime: -1})
	}
	p.ackWaiters = nil
}

// read serves a consumer fetch: whole batches from offset, below the high
// watermark.
func (p *partition) read(offset int64, maxBytes int, minOneBatch bool) (api.FetchResult, error) {
	hw := p.highWatermark.Load()
	res := api.FetchResult{HighWatermark: hw, LogStartOffset: p.log.LogStartOffset()}
	if offset < res.LogStartOffset || offset > p.log.LogEndOffset() {
		return res, kerr.OffsetOutOfRange
	}
	if offset >= hw {
		return res, nil
	}
	data, err := p.log.Read(offset, maxBytes, hw, minOneBatch)
	if err != nil {
		if errors.Is(err, storage.ErrOffsetOutOfRange) {
			return res, kerr.OffsetOutOfRange
		}
		p.b.log.Error("read failed", "partition", p.name(), "offset", offset, "err", err)
		return res, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	res.Records = data
	return res, nil
}

// checkLeaderEpoch fences requests by the caller's view of the leader
// epoch (KIP-320): an older epoch means the caller missed a leader change,
// a newer one that this broker has not learnt of it yet. -1 skips the check.
func (p *partition) checkLeaderEpoch(current int32) error {
	if current < 0 {
		return nil
	}
	p.mu.Lock()
	epoch := p.leaderEpoch
	p.mu.Unlock()
	switch {
	case current < epoch:
		return kerr.FencedLeaderEpoch
	case current > epoch:
		return kerr.UnknownLeaderEpoch
	}
	return nil
}

func (p *partition) addWatcher(w *fetchWaiter) {
	p.mu.Lock()
	p.watchers[w] = struct{}{}
	p.mu.Unlock()
}

func (p *partition) removeWatcher(w *fetchWaiter) {
	p.mu.Lock()
	delete(p.watchers, w)
	p.mu.Unlock()
}

// close stops the partition: waiting produces fail with
// NOT_LEADER_OR_FOLLOWER, and the log is closed cleanly.
func (p *partition) close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	if p.flushTimer != nil {
		p.flushTimer.Stop()
	}
	p.failAcksLocked(kerr.NotLeaderForPartition)
	for fw := range p.watchers {
		fw.poke()
	}
	p.mu.Unlock()
	return p.log.Close()
}
