package sim

import (
	"errors"
	"fmt"
	"path"
	"slices"
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

// replica is one partition replica on a process: internal/node's
// partition (partition.go) and its follower half (fetcher.go), single
// threaded. The decisions stay in replication.Leader, producer.Table and
// storage.Log; this file only wires them as partition.go does.
type replica struct {
	p     *process
	topic string
	id    metadata.TopicID
	index int32
	log   *storage.Log

	cfg         config.TopicConfig
	state       metadata.Partition
	role        metadata.ReplicaRole // decided with state
	leaderEpoch int32
	leader      *replication.Leader
	hw          int64
	durableEnd  int64
	producers   *producer.Table
	ackWaiters  []*ackWaiter
	failed      error
	unflushed   int64
	flushTimer  bool
	syncQueued  bool
	// coord is the group coordinator while this replica leads an offsets
	// partition (node_group.go).
	coord *coordinator
}

type ackWaiter struct {
	target int64
	all    bool
	// committed waits for the high watermark alone (awaitCommitted).
	committed bool
	result    api.ProduceResult
	done      func(api.ProduceResult)
	fired     bool
}

const maxProducersPerPartition = 1000

func (p *process) openReplica(t *metadata.Topic, st metadata.Partition, cfg config.TopicConfig) (*replica, error) {
	dir := path.Join("data", fmt.Sprintf("%s-%d", t.Name, st.Index))
	log, err := storage.Open(p.n.fs, dir, storageConfig(cfg), storage.Options{Logger: p.log})
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	r := &replica{p: p, topic: t.Name, id: t.ID, index: st.Index, log: log, cfg: cfg,
		producers: producer.NewTable(maxProducersPerPartition), leaderEpoch: -1}
	durable, err := log.Sync()
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("sync recovered log %s: %w", dir, err)
	}
	r.durableEnd = durable
	if err := r.rebuildProducerState(); err != nil {
		log.Close()
		return nil, err
	}
	// As openPartition: a reopened replica does not know which of its
	// records were committed, so its high watermark starts at the log
	// start; it learns the real one from its leader, or as leader once
	// its ISR has reported.
	r.hw = log.LogStartOffset()
	return r, nil
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

func (r *replica) name() string { return fmt.Sprintf("%s-%d", r.topic, r.index) }

func (r *replica) nowMs() int64 { return r.p.n.c.nowMs() }

func (r *replica) rebuildProducerState() error {
	t := producer.NewTable(maxProducersPerPartition)
	if err := r.log.ScanHeaders(r.log.LogStartOffset(), func(h batch.Header) error {
		t.Apply(h)
		return nil
	}); err != nil {
		return fmt.Errorf("rebuild producer state of %s: %w", r.name(), err)
	}
	r.producers = t
	return nil
}

// apply is partition.apply: leadership, ISR and configuration from the
// image, in the role the same image gives this node.
func (r *replica) apply(st metadata.Partition, role metadata.ReplicaRole, cfg config.TopicConfig) error {
	r.log.SetConfig(storageConfig(cfg))
	r.cfg = cfg
	prev := r.state
	r.state = st
	r.role = role
	switch {
	case role == metadata.RoleLeader && (r.leader == nil || st.LeaderEpoch != prev.LeaderEpoch):
		return r.becomeLeader(st)
	case role == metadata.RoleLeader:
		hwMoved, err := r.leader.OnISRCommitted(replication.StateOf(st), r.nowMs())
		if errors.Is(err, replication.ErrLeaderChanged) {
			return r.becomeLeader(st)
		}
		if err != nil {
			return fmt.Errorf("%s: apply ISR change: %w", r.name(), err)
		}
		if hwMoved {
			r.progress()
		}
		r.completeAcks()
	default:
		r.becomeFollower(st)
	}
	return nil
}

func (r *replica) becomeLeader(st metadata.Partition) error {
	leo := r.log.LogEndOffset()
	if latest, ok := r.log.Epochs().Latest(); !ok || latest < st.LeaderEpoch {
		if err := r.log.Epochs().Assign(st.LeaderEpoch, leo); err != nil {
			return fmt.Errorf("%s: record leader epoch %d: %w", r.name(), st.LeaderEpoch, err)
		}
	}
	durable := r.durableEnd
	if r.cfg.WriteCaching {
		durable = leo
	}
	hw := min(r.hw, leo)
	l, err := replication.NewLeader(r.replicationConfig(), replication.StateOf(st), replication.LocalLog{
		LogEndOffset: leo, DurableEnd: durable, HighWatermark: hw, EpochStartOffset: leo,
	}, r.nowMs())
	if err != nil {
		return fmt.Errorf("%s: become leader: %w", r.name(), err)
	}
	r.failAcks(kerr.NotLeaderForPartition)
	r.leader = l
	r.leaderEpoch = st.LeaderEpoch
	r.p.n.tracef("leads %s epoch %d isr %v log end %d hw %d", r.name(), st.LeaderEpoch, st.ISR, leo, hw)
	r.p.n.c.onBecomeLeader(r.p.n, r, st.LeaderEpoch)
	r.p.n.c.onLeaderHW(r.p.n, r)
	r.progress()
	if r.topic == offsetsTopic {
		r.startCoordinator()
	}
	return nil
}

func (r *replica) becomeFollower(st metadata.Partition) {
	if r.leader != nil {
		r.p.n.tracef("no longer leads %s (role %v) leader %d epoch %d", r.name(), r.role, st.Leader, st.LeaderEpoch)
	}
	r.leader = nil
	r.stopCoordinator("leadership moved")
	r.leaderEpoch = st.LeaderEpoch
	r.failAcks(kerr.NotLeaderForPartition)
}

func (r *replica) replicationConfig() replication.Config {
	return replication.Config{
		LocalID:             r.p.n.id,
		ReplicaLagTimeMaxMs: replicaLagMax.Milliseconds(),
		MinInsyncReplicas:   max(r.cfg.MinInsyncReplicas, 1),
	}
}

// produce is partition.produce.
func (r *replica) produce(req api.ProduceParams, done func(api.ProduceResult)) {
	fail := func(err error) { done(api.ProduceResult{Err: err, BaseOffset: -1, LogAppendTime: -1}) }
	if r.leader == nil {
		fail(kerr.NotLeaderForPartition)
		return
	}
	if r.failed != nil {
		fail(fmt.Errorf("%w: %v", kerr.KafkaStorageError, r.failed))
		return
	}
	if req.Acks == -1 {
		if err := r.leader.CheckAcksAll(); err != nil {
			fail(err)
			return
		}
	}
	res := api.ProduceResult{BaseOffset: -1, LogAppendTime: -1}
	var target, appended int64
	for i, b := range req.Batches {
		h, err := batch.ParseHeader(b)
		if err != nil {
			fail(fmt.Errorf("%w: %v", kerr.CorruptMessage, err))
			return
		}
		dec, err := r.producers.Check(h)
		if err != nil {
			fail(err)
			return
		}
		if dec.Action == producer.Duplicate {
			if i == 0 {
				res.BaseOffset = dec.Original.BaseOffset
			}
			target = max(target, dec.Original.LastOffset+1)
			continue
		}
		ar, err := r.log.Append(b, r.leaderEpoch, r.nowMs())
		if err != nil {
			r.p.n.tracef("%s append failed: %v", r.name(), err)
			fail(fmt.Errorf("%w: %v", kerr.KafkaStorageError, err))
			return
		}
		h.BaseOffset = ar.BaseOffset
		r.producers.Update(h)
		if i == 0 {
			res.BaseOffset = ar.BaseOffset
		}
		target = max(target, ar.LastOffset+1)
		appended += int64(h.RecordCount)
	}
	res.LogStartOffset = r.log.LogStartOffset()
	if appended > 0 {
		r.afterAppend(appended)
	}
	if req.Acks == 0 || r.ackSatisfied(target, req.Acks == -1, &res) {
		done(res)
		return
	}
	r.park(&ackWaiter{target: target, all: req.Acks == -1, result: res, done: done}, req.Timeout)
}

// park makes w wait for its acknowledgement, or REQUEST_TIMED_OUT after
// timeout.
func (r *replica) park(w *ackWaiter, timeout time.Duration) {
	r.ackWaiters = append(r.ackWaiters, w)
	r.p.n.after(timeout, func() {
		if w.fired {
			return
		}
		w.fired = true
		r.ackWaiters = slices.DeleteFunc(r.ackWaiters, func(x *ackWaiter) bool { return x == w })
		w.done(api.ProduceResult{Err: kerr.RequestTimedOut, BaseOffset: -1, LogAppendTime: -1})
	})
}

// awaitCommitted is partition.awaitCommitted: done(nil) once the high
// watermark reaches target, else the error of a lost leadership or of the
// timeout.
func (r *replica) awaitCommitted(target int64, timeout time.Duration, done func(error)) {
	if r.leader == nil {
		done(kerr.NotLeaderForPartition)
		return
	}
	if r.leader.HighWatermark() >= target {
		done(nil)
		return
	}
	r.park(&ackWaiter{target: target, committed: true, done: func(res api.ProduceResult) { done(res.Err) }}, timeout)
}

func (r *replica) ackSatisfied(target int64, all bool, res *api.ProduceResult) bool {
	if !all {
		return r.durableEnd >= target
	}
	done, err := r.leader.AckReady(target)
	if done && err != nil {
		res.Err = err
	}
	return done
}

// afterAppend is afterAppendLocked: group commit, or write.caching with
// flush.messages / flush.ms.
func (r *replica) afterAppend(messages int64) {
	leo := r.log.LogEndOffset()
	if err := r.leader.OnLocalAppend(leo); err != nil {
		r.p.n.c.violation("%s on %s: replication state refused an append: %v", r.name(), r.p.n, err)
	}
	r.p.pokeFetches()
	if !r.cfg.WriteCaching {
		r.scheduleSync()
		return
	}
	r.durableEnd = leo
	if _, err := r.leader.OnLocalDurable(leo); err != nil {
		r.p.n.c.violation("%s on %s: replication state refused a durable end: %v", r.name(), r.p.n, err)
	}
	r.progress()
	r.unflushed += messages
	if r.cfg.FlushMessages > 0 && r.unflushed >= r.cfg.FlushMessages {
		r.unflushed = 0
		r.scheduleSync()
		return
	}
	if !r.flushTimer && r.cfg.FlushMs > 0 && r.cfg.FlushMs < 24*3600*1000 {
		r.flushTimer = true
		r.p.n.after(msDuration(r.cfg.FlushMs), func() {
			r.flushTimer = false
			r.unflushed = 0
			r.scheduleSync()
		})
	}
}

// scheduleSync is the flusher: one fsync, a moment later, covers every
// append before it started.
func (r *replica) scheduleSync() {
	if r.syncQueued {
		return
	}
	r.syncQueued = true
	r.p.n.after(r.p.n.c.s.between(0, maxFsyncDelay), func() {
		r.syncQueued = false
		r.sync()
	})
}

func (r *replica) sync() {
	durable, err := r.log.Sync()
	if err != nil {
		r.fail(err)
		return
	}
	if r.cfg.WriteCaching || durable <= r.durableEnd {
		return
	}
	r.durableEnd = durable
	if r.leader != nil {
		if _, err := r.leader.OnLocalDurable(durable); err != nil {
			r.p.n.c.violation("%s on %s: replication state refused a durable end: %v", r.name(), r.p.n, err)
		}
		r.progress()
	}
}

func (r *replica) fail(err error) {
	if r.failed == nil {
		r.failed = err
		r.p.n.tracef("%s: fsync failed, refusing writes until restart: %v", r.name(), err)
	}
	r.failAcks(fmt.Errorf("%w: %v", kerr.KafkaStorageError, err))
}

// progress publishes the leader's high watermark, completes acks and
// wakes waiting fetches.
func (r *replica) progress() {
	if r.leader != nil {
		if hw := r.leader.HighWatermark(); hw > r.hw {
			r.hw = hw
			r.p.n.c.onLeaderHW(r.p.n, r)
			r.p.pokeFetches()
		} else if hw < r.hw {
			r.p.n.c.violation("%s on %s: leader high watermark %d below the published %d", r.name(), r.p.n, hw, r.hw)
		}
	}
	r.completeAcks()
}

func (r *replica) completeAcks() {
	if r.leader == nil || len(r.ackWaiters) == 0 {
		return
	}
	kept := r.ackWaiters[:0]
	var ready []*ackWaiter
	for _, w := range r.ackWaiters {
		if w.committed && r.leader.HighWatermark() >= w.target || !w.committed && r.ackSatisfied(w.target, w.all, &w.result) {
			w.fired = true
			ready = append(ready, w)
		} else {
			kept = append(kept, w)
		}
	}
	clear(r.ackWaiters[len(kept):])
	r.ackWaiters = kept
	for _, w := range ready {
		if w.all && w.result.Err == nil {
			r.p.n.c.onAcksAll(r, w.target)
		}
		w.done(w.result)
	}
}

func (r *replica) failAcks(err error) {
	waiters := r.ackWaiters
	r.ackWaiters = nil
	for _, w := range waiters {
		w.fired = true
		w.done(api.ProduceResult{Err: err, BaseOffset: -1, LogAppendTime: -1})
	}
}

// onFollowerFetch is partition.onFollowerFetch.
func (r *replica) onFollowerFetch(id int32, offset int64) error {
	if r.leader == nil {
		return kerr.NotLeaderForPartition
	}
	if !slices.Contains(r.state.Replicas, id) {
		return kerr.NotLeaderForPartition
	}
	hwMoved, err := r.leader.OnFollowerFetch(id, offset, r.nowMs())
	if err != nil {
		return fmt.Errorf("%w: %v", kerr.OffsetOutOfRange, err)
	}
	if hwMoved {
		r.progress()
	}
	r.maybeProposeISR()
	return nil
}

// maybeProposeISR sends the ISR change replication.Leader proposes, as
// partition.maybeProposeISRLocked and Broker.proposeISRChange do.
func (r *replica) maybeProposeISR() {
	if r.leader == nil {
		return
	}
	change := r.leader.Tick(r.nowMs(), r.p.isEligibleReplica)
	if change == nil {
		return
	}
	r.p.n.tracef("%s proposes ISR %v (epoch %d, partition epoch %d)", r.name(), change.NewISR, change.LeaderEpoch, change.PartitionEpoch)
	r.p.sendISRChange(r, *change)
}

func (r *replica) onISRChangeRejected(change replication.ISRChange, err error) {
	if r.leader == nil {
		return
	}
	if r.leader.OnISRChangeRejected(change, err) {
		r.progress()
	}
}

// read is partition.read.
func (r *replica) read(offset int64, maxBytes int, minOneBatch, fromReplica bool) (api.FetchResult, error) {
	res := api.FetchResult{HighWatermark: r.hw, LogStartOffset: r.log.LogStartOffset()}
	leo := r.log.LogEndOffset()
	if offset < res.LogStartOffset || offset > leo {
		return res, kerr.OffsetOutOfRange
	}
	upTo := r.hw
	if fromReplica {
		upTo = leo
	}
	if offset >= upTo {
		return res, nil
	}
	data, err := r.log.Read(offset, maxBytes, upTo, minOneBatch)
	if err != nil {
		if errors.Is(err, storage.ErrOffsetOutOfRange) {
			return res, kerr.OffsetOutOfRange
		}
		return res, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	res.Records = data
	return res, nil
}

func (r *replica) checkLeaderEpoch(current int32) error {
	if current < 0 {
		return nil
	}
	return replication.CheckLeaderEpoch(current, r.leaderEpoch)
}
