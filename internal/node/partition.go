package node

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/producer"
	"github.com/skein-log/skein/internal/replication"
	"github.com/skein-log/skein/internal/storage"
)

// maxProducersPerPartition bounds the idempotent-producer table of one
// partition (a few hundred bytes per producer).
const maxProducersPerPartition = 100_000

// partition is the runtime of one partition replica on this broker: its
// log, its idempotent-producer table, and either its leader state (with the
// produce requests waiting for acknowledgement) or its follower state.
//
// Locking: mu guards everything below it. The log has its own lock and is
// safe to read without mu; appends happen under mu so that the producer
// table and the log never disagree. Sync runs without mu (group commit).
// Lock order: partition.mu, then fetchWaiter.mu.
type partition struct {
	b     *Broker
	topic string
	id    metadata.TopicID
	index int32
	log   *storage.Log

	// highWatermark is readable without mu: consumers read below it.
	highWatermark atomic.Int64

	mu    sync.Mutex
	cfg   config.TopicConfig
	state metadata.Partition // as last applied from the image
	// role is what this broker does with the replica, decided with state
	// (metadata.Image.ReplicaRole).
	role        metadata.ReplicaRole
	leaderEpoch int32
	// leader is set while this broker leads the partition.
	leader *replication.Leader
	// durableEnd is the end of what this replica has fsynced (its log end
	// with write.caching).
	durableEnd int64
	producers  *producer.Table
	ackWaiters []*ackWaiter
	watchers   map[*fetchWaiter]struct{}
	// failed is set when the log can no longer be trusted (an fsync
	// failed): every later write fails with KAFKA_STORAGE_ERROR.
	failed error
	// offline is set when the partition's log directory went offline
	// (diskfail.go): reads fail too. Readable without mu.
	offline atomic.Bool
	// unflushed counts messages appended since the last fsync, for
	// flush.messages when write.caching is on.
	unflushed  int64
	flushTimer *time.Timer
	closed     bool
}

// ackWaiter is a produce request waiting for its acknowledgement: for
// acks=1 until this replica has target durably, for acks=all until the
// replication state says the ISR has it; or, with committed, a wait for
// the high watermark alone (awaitCommitted).
type ackWaiter struct {
	target    int64
	all       bool
	committed bool
	result    api.ProduceResult
	done      func(api.ProduceResult)
	timer     *time.Timer
	fired     bool
}

func openPartition(b *Broker, t *metadata.Topic, p metadata.Partition, cfg config.TopicConfig, dir string) (*partition, error) {
	log, err := storage.Open(b.fs, dir, storageConfig(cfg), storage.Options{Logger: b.log.With("partition", fmt.Sprintf("%s-%d", t.Name, p.Index))})
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	pt := &partition{
		b: b, topic: t.Name, id: t.ID, index: p.Index, log: log,
		cfg:       cfg,
		watchers:  map[*fetchWaiter]struct{}{},
		producers: producer.NewTable(maxProducersPerPartition),
	}
	// Everything recovered from disk is made durable before it is served:
	// after a kill -9 the page cache may hold bytes no fsync covered.
	durable, err := log.Sync()
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("sync recovered log %s: %w", dir, err)
	}
	pt.durableEnd = durable
	err = pt.rebuildProducerStateLocked()
	if errors.Is(err, storage.ErrCorrupt) {
		// A damaged batch below the recovery point, which opening does not
		// re-validate. The scan noted it; opening again cuts the log there,
		// and the replica fetches the rest from its leader. This runs when
		// the partition is opened, before this broker can lead it: a
		// restarted broker is fenced first.
		b.log.Warn("damaged log found while opening; reopening to cut it at the damage", "partition", pt.name(), "err", err)
		log.Close()
		if log, err = storage.Open(b.fs, dir, storageConfig(cfg), storage.Options{Logger: b.log.With("partition", pt.name())}); err != nil {
			return nil, fmt.Errorf("reopen damaged log %s: %w", dir, err)
		}
		pt.log = log
		if pt.durableEnd, err = log.Sync(); err != nil {
			log.Close()
			return nil, fmt.Errorf("sync recovered log %s: %w", dir, err)
		}
		err = pt.rebuildProducerStateLocked()
	}
	if err != nil {
		log.Close()
		return nil, err
	}
	// A reopened replica does not know which of its records were committed:
	// its tail may hold records a leader appended but never got replicated
	// (a killed leader's), which a new leader has since overwritten. Serving
	// them would show consumers records that are then truncated (seen by
	// skein verify, seed 213: a restarted broker served one before it
	// learnt it no longer led). So the high watermark starts at the log
	// start: as a follower it learns the real one from its leader; as a
	// leader replication.Leader raises it once every ISR member has
	// reported (at once when the ISR is this broker alone). Kafka keeps a
	// high-watermark checkpoint for this; without one we start low.
	pt.highWatermark.Store(pt.log.LogStartOffset())
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

		DeleteRetentionMs:      cfg.DeleteRetentionMs,
		MinCleanableDirtyRatio: cfg.MinCleanableDirtyRatio,
		MinCompactionLagMs:     cfg.MinCompactionLagMs,
		MaxCompactionLagMs:     cfg.MaxCompactionLagMs,
	}
}

func (p *partition) name() string { return fmt.Sprintf("%s-%d", p.topic, p.index) }

// rebuildProducerStateLocked replays the log's batch headers into a fresh
// producer table: at start-up, and after a truncation removed batches the
// table remembered.
func (p *partition) rebuildProducerStateLocked() error {
	t := producer.NewTable(maxProducersPerPartition)
	if err := p.log.ScanHeaders(p.log.LogStartOffset(), func(h batch.Header) error {
		t.Apply(h)
		return nil
	}); err != nil {
		return fmt.Errorf("rebuild producer state of %s: %w", p.name(), err)
	}
	p.producers = t
	return nil
}

// apply brings the partition in line with the image: leadership, ISR,
// configuration. Called by reconcile with the partition's entry and the
// role the same image gives this broker.
func (p *partition) apply(st metadata.Partition, role metadata.ReplicaRole, cfg config.TopicConfig, now time.Time) error {
	p.log.SetConfig(storageConfig(cfg))
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.cfg = cfg
	prev := p.state
	p.state = st
	p.role = role
	switch {
	case role == metadata.RoleLeader && (p.leader == nil || st.LeaderEpoch != prev.LeaderEpoch):
		return p.becomeLeaderLocked(st, now)
	case role == metadata.RoleLeader:
		hwMoved, err := p.leader.OnISRCommitted(replication.StateOf(st), now.UnixMilli())
		if errors.Is(err, replication.ErrLeaderChanged) {
			return p.becomeLeaderLocked(st, now)
		}
		if err != nil {
			return fmt.Errorf("%s: apply ISR change: %w", p.name(), err)
		}
		if len(st.ISR) < len(prev.ISR) {
			p.b.metrics.IncISRShrink()
		} else if len(st.ISR) > len(prev.ISR) {
			p.b.metrics.IncISRExpand()
		}
		if hwMoved {
			p.progressLocked()
		}
		p.completeAcksLocked()
	default:
		p.becomeFollowerLocked(st)
	}
	return nil
}

// becomeLeaderLocked starts a new leader epoch: the epoch starts at the
// current log end, which is recorded in the epoch cache before any append so
// that followers asking where the previous epoch ended get the right answer.
func (p *partition) becomeLeaderLocked(st metadata.Partition, now time.Time) error {
	leo := p.log.LogEndOffset()
	if latest, ok := p.log.Epochs().Latest(); !ok || latest < st.LeaderEpoch {
		if err := p.log.Epochs().Assign(st.LeaderEpoch, leo); err != nil {
			return fmt.Errorf("%s: record leader epoch %d: %w", p.name(), st.LeaderEpoch, err)
		}
	}
	durable := p.durableEnd
	if p.cfg.WriteCaching {
		durable = leo
	}
	hw := min(p.highWatermark.Load(), leo)
	l, err := replication.NewLeader(p.replicationConfig(), replication.StateOf(st), replication.LocalLog{
		LogEndOffset: leo, DurableEnd: durable, HighWatermark: hw, EpochStartOffset: leo,
	}, now.UnixMilli())
	if err != nil {
		return fmt.Errorf("%s: become leader: %w", p.name(), err)
	}
	p.failAcksLocked(kerr.NotLeaderForPartition)
	p.leader = l
	p.leaderEpoch = st.LeaderEpoch
	p.b.log.Info("leading partition", "partition", p.name(), "epoch", st.LeaderEpoch, "isr", st.ISR, "log_end", leo)
	p.progressLocked()
	return nil
}

// becomeFollowerLocked ends leadership: the replica follows the image's
// leader (RoleFollower) or waits, neither leading nor fetching (RoleNone).
func (p *partition) becomeFollowerLocked(st metadata.Partition) {
	if p.leader != nil {
		p.b.log.Info("no longer leading partition", "partition", p.name(), "role", p.role, "leader", st.Leader, "epoch", st.LeaderEpoch)
	}
	p.leader = nil
	p.leaderEpoch = st.LeaderEpoch
	p.failAcksLocked(kerr.NotLeaderForPartition)
}

func (p *partition) replicationConfig() replication.Config {
	return replication.Config{
		LocalID:             p.b.cfg.NodeID,
		ReplicaLagTimeMaxMs: max(p.b.cfg.ReplicaLagTimeMax.Milliseconds(), 1),
		MinInsyncReplicas:   max(p.cfg.MinInsyncReplicas, 1),
	}
}

// describeProducers lists the producer table of a partition led here.
func (p *partition) describeProducers() ([]api.ProducerState, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.leader == nil {
		return nil, kerr.NotLeaderForPartition
	}
	return api.ProducerStates(p.producers.Entries()), nil
}

// produce appends the batches and arranges for done to be called when the
// acks the client asked for are satisfied.
func (p *partition) produce(req api.ProduceParams, done func(api.ProduceResult)) {
	now := time.Now()
	p.mu.Lock()
	if p.closed || p.leader == nil {
		p.mu.Unlock()
		done(api.ProduceResult{Err: kerr.NotLeaderForPartition, BaseOffset: -1, LogAppendTime: -1})
		return
	}
	if p.failed != nil {
		err := fmt.Errorf("%w: %v", kerr.KafkaStorageError, p.failed)
		p.mu.Unlock()
		p.b.answerAfterHandover(p, err, func(err error) { done(api.ProduceResult{Err: err, BaseOffset: -1, LogAppendTime: -1}) })
		return
	}
	if req.Acks == -1 {
		if err := p.leader.CheckAcksAll(); err != nil {
			p.mu.Unlock()
			done(api.ProduceResult{Err: err, BaseOffset: -1, LogAppendTime: -1})
			return
		}
	}
	res := api.ProduceResult{BaseOffset: -1, LogAppendTime: -1}
	var target, appended, bytesIn int64
	for i, b := range req.Batches {
		h, err := batch.ParseHeader(b)
		if err != nil { // validated by the handler; a failure here is a bug
			p.mu.Unlock()
			done(api.ProduceResult{Err: fmt.Errorf("%w: %v", kerr.CorruptMessage, err), BaseOffset: -1, LogAppendTime: -1})
			return
		}
		dec, err := p.producers.Check(h)
		if err != nil {
			p.mu.Unlock()
			done(api.ProduceResult{Err: err, BaseOffset: -1, LogAppendTime: -1})
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
			p.b.log.Error("append failed", "partition", p.name(), "err", err)
			storageErr := fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
			if isDiskFailure(err) {
				// Both under p.mu: the stop that logDirFailed starts
				// takes p.mu (to fence p) before it stops waiting for
				// held answers, so this answer is held in time.
				p.b.logDirFailed(p, err)
				p.b.answerAfterHandover(p, storageErr, func(err error) { done(api.ProduceResult{Err: err, BaseOffset: -1, LogAppendTime: -1}) })
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
			done(api.ProduceResult{Err: storageErr, BaseOffset: -1, LogAppendTime: -1})
			return
		}
		h.BaseOffset = ar.BaseOffset
		p.producers.Update(h)
		if i == 0 {
			res.BaseOffset = ar.BaseOffset
		}
		target = max(target, ar.LastOffset+1)
		appended += int64(h.RecordCount)
		bytesIn += int64(len(b))
	}
	res.LogStartOffset = p.log.LogStartOffset()
	if appended > 0 {
		p.afterAppendLocked(appended)
	}
	if req.Acks == 0 || p.ackSatisfiedLocked(target, req.Acks == -1, &res) {
		p.mu.Unlock()
		p.b.metrics.AddBytesIn(p.topic, bytesIn, appended)
		done(res)
		return
	}
	p.parkLocked(&ackWaiter{target: target, all: req.Acks == -1, result: res, done: done}, req.Timeout)
	p.mu.Unlock()
	p.b.metrics.AddBytesIn(p.topic, bytesIn, appended)
}

// parkLocked makes w wait for its acknowledgement, or REQUEST_TIMED_OUT
// after timeout.
func (p *partition) parkLocked(w *ackWaiter, timeout time.Duration) {
	p.ackWaiters = append(p.ackWaiters, w)
	w.timer = time.AfterFunc(timeout, func() { p.expireAck(w) })
}

// awaitCommitted calls done(nil) once the high watermark reaches target,
// or done(err) when leadership is lost, the log fails or timeout passes.
// A group coordinator loaded from the log waits for it before answering
// (groupCoordinator.awaitLoaded). Unlike an acks=all produce it does not
// check min.insync.replicas: nothing is written, and records below the
// high watermark are committed whatever the ISR's size (failing here
// would only make the coordinator reload, again and again).
func (p *partition) awaitCommitted(target int64, timeout time.Duration, done func(error)) {
	p.mu.Lock()
	if p.closed || p.leader == nil {
		p.mu.Unlock()
		done(kerr.NotLeaderForPartition)
		return
	}
	if p.leader.HighWatermark() >= target {
		p.mu.Unlock()
		done(nil)
		return
	}
	p.parkLocked(&ackWaiter{target: target, committed: true, done: func(res api.ProduceResult) { done(res.Err) }}, timeout)
	p.mu.Unlock()
}

// ackSatisfiedLocked reports whether a produce up to target can be
// answered now, setting res.Err for acks=all when the ISR that has it is
// smaller than min.insync.replicas.
func (p *partition) ackSatisfiedLocked(target int64, all bool, res *api.ProduceResult) bool {
	if !all {
		return p.durableEnd >= target
	}
	done, err := p.leader.AckReady(target)
	if done && err != nil {
		res.Err = err
	}
	return done
}

// afterAppendLocked decides how the new data becomes durable. With the
// default contract the group-committed fsync does it; with write.caching
// the log end counts as durable now and fsync follows the topic's
// flush.messages / flush.ms.
func (p *partition) afterAppendLocked(messages int64) {
	leo := p.log.LogEndOffset()
	if err := p.leader.OnLocalAppend(leo); err != nil {
		p.b.log.Error("replication state refused an append", "partition", p.name(), "err", err)
	}
	for fw := range p.watchers {
		fw.poke() // followers wait for new data, not for the high watermark
	}
	if !p.cfg.WriteCaching {
		p.b.flusher.schedule(p)
		return
	}
	p.durableEnd = leo
	if _, err := p.leader.OnLocalDurable(leo); err != nil {
		p.b.log.Error("replication state refused a durable end", "partition", p.name(), "err", err)
	}
	p.progressLocked()
	p.unflushed += messages
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
	start := time.Now()
	durable, err := p.log.Sync()
	p.b.metrics.ObserveFsync(time.Since(start))
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.failLocked(err)
		return
	}
	if p.cfg.WriteCaching || durable <= p.durableEnd {
		return
	}
	p.durableEnd = durable
	if p.leader != nil {
		if _, err := p.leader.OnLocalDurable(durable); err != nil {
			p.b.log.Error("replication state refused a durable end", "partition", p.name(), "err", err)
		}
		p.progressLocked()
	}
}

// failLocked fences the partition after an fsync error: once fsync has
// failed, the page cache may not match the disk, so nothing more is written
// or acknowledged until a restart re-reads the log.
func (p *partition) failLocked(err error) {
	if p.failed == nil {
		p.failed = err
		p.b.log.Error("fsync failed; partition refuses writes until restart", "partition", p.name(), "err", err)
	}
	p.b.logDirFailed(p, err)
	p.failAcksLocked(fmt.Errorf("%w: %v", kerr.KafkaStorageError, err))
}

// progressLocked publishes the leader's high watermark, completes the
// acknowledgements it allows and wakes waiting fetches.
func (p *partition) progressLocked() {
	if p.leader != nil {
		if hw := p.leader.HighWatermark(); hw > p.highWatermark.Load() {
			p.highWatermark.Store(hw)
			for fw := range p.watchers {
				fw.poke()
			}
		}
	}
	p.completeAcksLocked()
}

func (p *partition) completeAcksLocked() {
	if p.leader == nil || len(p.ackWaiters) == 0 {
		return
	}
	kept := p.ackWaiters[:0]
	var ready []*ackWaiter
	for _, w := range p.ackWaiters {
		if w.committed && p.leader.HighWatermark() >= w.target || !w.committed && p.ackSatisfiedLocked(w.target, w.all, &w.result) {
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
}

func (p *partition) expireAck(w *ackWaiter) {
	p.mu.Lock()
	if w.fired {
		p.mu.Unlock()
		return
	}
	w.fired = true
	p.ackWaiters = slices.DeleteFunc(p.ackWaiters, func(x *ackWaiter) bool { return x == w })
	p.mu.Unlock()
	w.done(api.ProduceResult{Err: kerr.RequestTimedOut, BaseOffset: -1, LogAppendTime: -1})
}

func (p *partition) failAcksLocked(err error) {
	for _, w := range p.ackWaiters {
		w.fired = true
		w.timer.Stop()
		if errors.Is(err, kerr.KafkaStorageError) {
			p.b.answerAfterHandover(p, err, func(err error) { w.done(api.ProduceResult{Err: err, BaseOffset: -1, LogAppendTime: -1}) })
			continue
		}
		go w.done(api.ProduceResult{Err: err, BaseOffset: -1, LogAppendTime: -1})
	}
	p.ackWaiters = nil
}

// onFollowerFetch records a follower's position (the offset it fetches
// from is what it holds durably) and proposes an ISR change if one is due.
func (p *partition) onFollowerFetch(replica int32, offset int64, now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader == nil {
		return kerr.NotLeaderForPartition
	}
	if !slices.Contains(p.state.Replicas, replica) {
		return kerr.NotLeaderForPartition
	}
	hwMoved, err := p.leader.OnFollowerFetch(replica, offset, now.UnixMilli())
	if err != nil {
		return fmt.Errorf("%w: %v", kerr.OffsetOutOfRange, err)
	}
	if hwMoved {
		p.progressLocked()
	}
	p.maybeProposeISRLocked(now)
	return nil
}

// tick runs the time-driven part of replication: ISR shrinks for
// followers that stopped catching up.
func (p *partition) tick(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader == nil || p.closed {
		return
	}
	p.maybeProposeISRLocked(now)
}

func (p *partition) maybeProposeISRLocked(now time.Time) {
	change := p.leader.Tick(now.UnixMilli(), p.b.isEligibleReplica)
	if change == nil {
		return
	}
	p.b.log.Info("proposing ISR change", "partition", p.name(), "isr", p.state.ISR, "new_isr", change.NewISR)
	go p.b.proposeISRChange(p, *change)
}

// isrChangePending reports whether change is still this partition's
// proposal in flight, so a resend is due. Metadata settles it otherwise: a
// newer partition epoch (the change committed, or another one did and the
// controller would refuse it as stale) or another leader epoch.
func (p *partition) isrChangePending(change replication.ISRChange) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed && p.leader != nil && p.leader.IsPending(change)
}

// onISRChangeRejected lets the replication state retry after the
// controller refused a proposal.
func (p *partition) onISRChangeRejected(change replication.ISRChange, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader == nil {
		return
	}
	if p.leader.OnISRChangeRejected(change, err) {
		p.progressLocked()
	}
}

// read serves a fetch: whole batches from offset, below the high watermark
// for consumers, below the log end for followers.
func (p *partition) read(offset int64, maxBytes int, minOneBatch, replica bool) (api.FetchResult, error) {
	hw := p.highWatermark.Load()
	res := api.FetchResult{HighWatermark: hw, LogStartOffset: p.log.LogStartOffset()}
	if p.offline.Load() {
		return res, fmt.Errorf("%w: %s: log directory offline", kerr.KafkaStorageError, p.name())
	}
	leo := p.log.LogEndOffset()
	if offset < res.LogStartOffset || offset > leo {
		return res, kerr.OffsetOutOfRange
	}
	upTo := hw
	if replica {
		upTo = leo
	}
	if offset >= upTo {
		return res, nil
	}
	data, err := p.log.Read(offset, maxBytes, upTo, minOneBatch)
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
	return replication.CheckLeaderEpoch(current, epoch)
}

// acksAllWritable says why an acks=all produce would be refused right now
// (nil if it would be taken).
func (p *partition) acksAllWritable() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed || p.leader == nil:
		return kerr.NotLeaderForPartition
	case p.failed != nil:
		return fmt.Errorf("%w: %v", kerr.KafkaStorageError, p.failed)
	}
	return p.leader.CheckAcksAll()
}

func (p *partition) isLeader() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader != nil
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
// NOT_LEADER_OR_FOLLOWER, and the log is closed cleanly. A partition whose
// fsync failed was already reported; closing it is not a new error.
func (p *partition) close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.leader = nil
	if p.flushTimer != nil {
		p.flushTimer.Stop()
	}
	p.failAcksLocked(kerr.NotLeaderForPartition)
	for fw := range p.watchers {
		fw.poke()
	}
	failed := p.failed
	p.mu.Unlock()
	err := p.log.Close()
	if failed != nil {
		return nil
	}
	return err
}
