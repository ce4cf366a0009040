// Package replica is the runtime core of one partition replica: what a
// broker does with its log, its idempotent-producer table and its
// replication state as leader or follower. internal/node wraps it with a
// mutex, timers, a flusher and goroutines; internal/sim wraps the same core
// with its event queue, so the simulator proves the code that ships.
//
// The core holds no lock, reads no clock and starts no goroutine or timer.
// Every event carries the time (milliseconds since the epoch) and returns a
// Ready: the answers to complete, an fsync to queue, timers to arm, the high
// watermark to publish, waiters to wake, an ISR proposal to send and
// invariant violations. It calls storage.Log's append, read and truncate
// directly (deterministic on vfs); fsync is always an effect, except while
// opening (Open), before the replica serves anything.
package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/invariant"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/producer"
	"github.com/skein-log/skein/internal/replication"
	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/vfs"
)

// Options are the broker-level settings of a replica.
type Options struct {
	LocalID             int32
	ReplicaLagTimeMaxMs int64
	// MaxProducers bounds the idempotent-producer table (a few hundred
	// bytes per producer).
	MaxProducers int
	// ISRResendBackoffMinMs and ISRResendBackoffMaxMs are
	// replication.Config's (0: the broker's 100 ms doubling to 2 s).
	ISRResendBackoffMinMs, ISRResendBackoffMaxMs int64
	Logger                                       *slog.Logger
	// QuietFetchMs is, per follower, the time of the latest fetch the
	// wrapper admitted as quiet (QuietAdmits) rather than through Admit,
	// or any time before the current leader epoch if none (nil: the
	// wrapper admits none). The core reads it when the log end moves:
	// those fetches' times are the followers' caught-up times
	// (replication.Leader.OnLocalAppend).
	QuietFetchMs func(follower int32) int64
	// Fresh is storage.Options.Fresh: the caller just created the
	// replica's directory and syncs its filesystem (vfs.FS.SyncFS)
	// before the replica is applied a role.
	Fresh bool
	// MayFillAhead is storage.Options.MayFillAhead: the wrapper's
	// free-space floor, asked before the log writes zeros ahead of its
	// end (nil: always).
	MayFillAhead func(n int64) bool
	// PageCacheWindow is storage.Options.PageCacheWindow: how much of
	// its newest durable data the log keeps in the page cache (0: no
	// drop-behind). The wrapper calls Log.DropCache after its fsyncs.
	PageCacheWindow int64
}

// WaiterID names a produce (or awaitCommitted) waiting for its answer, so
// the wrapper can match the timer it armed to the answer that ends it.
type WaiterID uint64

// Answer is a produce answer to deliver.
type Answer struct {
	ID     WaiterID
	Done   func(api.ProduceResult)
	Result api.ProduceResult
	// AfterHandover marks a KAFKA_STORAGE_ERROR answer: the broker holds
	// it until its failed log directory's partitions are handed over, so
	// the client can be sent to the new leader (node's
	// answerAfterHandover). Wrappers without a handover deliver it as is.
	AfterHandover bool
}

// Timeout is a produce's request timeout to arm; when it fires, call
// Expire with the ID.
type Timeout struct {
	ID      WaiterID
	AfterMs int64
}

// ISRResend asks to send Change again after AfterMs (call ResendISR with
// Seq then).
type ISRResend struct {
	Change  replication.ISRChange
	AfterMs int64
	Seq     uint64
}

// Ready is what an event asks the wrapper to do, in this order: publish the
// high watermark, queue the fsync, arm timers, send the proposal, then
// deliver the answers outside the wrapper's lock.
type Ready struct {
	Answers  []Answer
	Timeouts []Timeout
	// Sync asks for a group-committed fsync of the log; report its result
	// with Synced.
	Sync bool
	// FlushAfterMs arms write.caching's flush.ms timer; call FlushTimer
	// when it fires.
	FlushAfterMs int64
	// HighWatermark is the high watermark to publish when HWChanged.
	HighWatermark int64
	HWChanged     bool
	// WakeFollowers asks to re-read the waiting fetches of followers:
	// there is new data above the log end they fetched from (or the
	// replica closed). Followers read below the log end and answer only
	// with data, so a moved high watermark alone does not wake them; they
	// learn it with their next fetch.
	WakeFollowers bool
	// WakeConsumers asks to re-read the waiting fetches of consumers: the
	// high watermark (and with it the last stable offset they read below)
	// moved, or the replica closed.
	WakeConsumers bool
	// Propose is an ISR change to send to the controller; report each
	// send's outcome with OnISRAnswer.
	Propose *replication.ISRChange
	Resend  *ISRResend
	// DiskFailed is a failed write or fsync: the log directory is gone.
	DiskFailed error
	// BecameLeader and Resigned report leadership changes; LeaderEpoch is
	// the epoch then.
	BecameLeader bool
	Resigned     bool
	LeaderEpoch  int32
	// AcksAll lists the targets of acks=all produces answered with
	// success (checked by the simulator: the ISR holds them).
	AcksAll []int64
	// ISRShrunk and ISRExpanded count committed ISR changes (metrics).
	ISRShrunk, ISRExpanded bool
	// MessagesIn and BytesIn count what a produce appended (metrics).
	MessagesIn, BytesIn int64
	// Violations are invariants found broken: the sim fails the seed, the
	// broker logs them and fences the partition.
	Violations []string
}

// Empty reports whether rd asks for nothing at all. Admit's Ready is
// empty whenever the step moved nothing a reader sees (no high watermark
// move, no proposal): an idle follower's fetch, thousands per second on
// a broker leading thousands of partitions, whose wrapper may then skip
// carrying it out (the last stable offset included, which such a step
// cannot move).
func (rd *Ready) Empty() bool {
	return len(rd.Answers) == 0 && len(rd.Timeouts) == 0 && !rd.Sync && rd.FlushAfterMs == 0 &&
		rd.HighWatermark == 0 && !rd.HWChanged && !rd.WakeFollowers && !rd.WakeConsumers &&
		rd.Propose == nil && rd.Resend == nil && rd.DiskFailed == nil && !rd.BecameLeader &&
		!rd.Resigned && rd.LeaderEpoch == 0 && len(rd.AcksAll) == 0 && !rd.ISRShrunk &&
		!rd.ISRExpanded && rd.MessagesIn == 0 && rd.BytesIn == 0 && len(rd.Violations) == 0
}

// waiter is a produce waiting for its acknowledgement: for acks=1 until
// this replica has target durably, for acks=all until the replication
// state says the ISR has it; or, with committed, a wait for the high
// watermark alone (AwaitCommitted).
type waiter struct {
	id        WaiterID
	target    int64
	all       bool
	committed bool
	result    api.ProduceResult
	done      func(api.ProduceResult)
}

// Replica is the core of one partition replica.
type Replica struct {
	opts  Options
	name  string
	log   *storage.Log
	cfg   config.TopicConfig
	state metadata.Partition // as last applied from the image
	// role is what this broker does with the replica, decided with state
	// (metadata.Image.ReplicaRole).
	role        metadata.ReplicaRole
	leaderEpoch int32
	leader      *replication.Leader // set while this broker leads
	hw          int64
	// durableEnd is the end of what this replica has fsynced (its log end
	// with write.caching).
	durableEnd int64
	producers  *producer.Table
	// pending are completed transactions whose marker the high watermark
	// has not passed yet (txn.go).
	pending []producer.CompletedTxn
	waiters []*waiter
	nextID  WaiterID
	// failed is set when the log can no longer be trusted (an fsync
	// failed, its directory went offline, an invariant broke): every
	// later write fails with KAFKA_STORAGE_ERROR.
	failed error
	// offline also refuses reads (a failed disk is not read from).
	offline bool
	// unflushed counts messages appended since the last fsync, for
	// flush.messages when write.caching is on.
	unflushed  int64
	flushArmed bool
	closed     bool
	// resendSeq names the resend timer armed last; resendWaiting is set
	// while it is armed and no send of the proposal is in flight.
	resendSeq     uint64
	resendWaiting bool
}

// Open opens (recovering) the log in dir and makes what it recovered
// durable before it is served: after a kill -9 the page cache may hold
// bytes no fsync covered. A damaged batch below the recovery point, which
// opening does not re-validate, is found while the producer state is
// rebuilt; opening again cuts the log there, and the replica fetches the
// rest from its leader. This runs before the broker can lead the
// partition: a restarted broker is fenced first.
func Open(fs vfs.FS, dir, name string, cfg config.TopicConfig, opts Options) (*Replica, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts.Logger = logger.With("partition", name)
	if opts.MaxProducers <= 0 {
		opts.MaxProducers = 100_000
	}
	r := &Replica{opts: opts, name: name, cfg: cfg, leaderEpoch: -1}
	var err error
	for attempt := 0; ; attempt++ {
		if r.log, err = storage.Open(fs, dir, StorageConfig(cfg), storage.Options{Logger: opts.Logger, Fresh: opts.Fresh, MayFillAhead: opts.MayFillAhead, PageCacheWindow: opts.PageCacheWindow}); err != nil {
			return nil, fmt.Errorf("open log %s: %w", dir, err)
		}
		if r.durableEnd, err = r.log.Sync(); err != nil {
			r.log.Close()
			return nil, fmt.Errorf("sync recovered log %s: %w", dir, err)
		}
		err = r.rebuildProducerState()
		if err == nil {
			break
		}
		r.log.Close()
		if attempt > 0 || !errors.Is(err, storage.ErrCorrupt) {
			return nil, err
		}
		opts.Logger.Warn("damaged log found while opening; reopening to cut it at the damage", "err", err)
	}
	// A reopened replica does not know which of its records were
	// committed: its tail may hold records a leader appended but never got
	// replicated (a killed leader's), which a new leader has since
	// overwritten. Serving them would show consumers records that are then
	// truncated (seen by skein verify, seed 213). So the high watermark
	// starts at the log start: as a follower it learns the real one from
	// its leader; as a leader replication.Leader raises it once every ISR
	// member has reported. Kafka keeps a high-watermark checkpoint for
	// this; without one we start low.
	r.hw = r.log.LogStartOffset()
	return r, nil
}

// StorageConfig is the log configuration of a topic's configuration.
func StorageConfig(cfg config.TopicConfig) storage.Config {
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

// rebuildProducerState replays the log's batch headers into a fresh
// producer table: at start-up, and after a truncation removed batches the
// table remembered.
//
// The same scan finds every transaction marker, so it rebuilds the open
// transactions and the aborted-transaction index too: the index on disk
// is checked against it and rewritten where it differs (a torn write, a
// crash during a compaction swap or truncation).
func (r *Replica) rebuildProducerState() error {
	r.producers = producer.NewTable(r.opts.MaxProducers)
	r.pending = nil
	var aborted []storage.AbortedTxn
	if err := r.log.ScanBatches(r.log.LogStartOffset(), func(h batch.Header, control []byte) error {
		if entry := r.applyBatch(h, control); entry != nil {
			aborted = append(aborted, *entry)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("rebuild producer state of %s: %w", r.name, err)
	}
	n, err := r.log.ReplaceAbortedTxns(aborted)
	if err != nil {
		return fmt.Errorf("rebuild aborted-transaction index of %s: %w", r.name, err)
	}
	if n > 0 {
		r.opts.Logger.Info("aborted-transaction index rebuilt from the log", "segments", n, "aborted", len(aborted))
	}
	return nil
}

// Log is the replica's log. Reads and appends of other owners (the
// cleaner, retention) go through the log's own lock.
func (r *Replica) Log() *storage.Log { return r.log }

// Name is topic-partition.
func (r *Replica) Name() string { return r.name }

// Config is the topic configuration last applied.
func (r *Replica) Config() config.TopicConfig { return r.cfg }

// State is the partition state last applied from the image.
func (r *Replica) State() metadata.Partition { return r.state }

// IsLeader reports whether this replica leads (and is open).
func (r *Replica) IsLeader() bool { return r.leader != nil }

// LeaderEpoch is the leader epoch of the image last applied.
func (r *Replica) LeaderEpoch() int32 { return r.leaderEpoch }

// HighWatermark is the high watermark consumers read below.
func (r *Replica) HighWatermark() int64 { return r.hw }

// DurableEnd is the end of what this replica holds durably.
func (r *Replica) DurableEnd() int64 { return r.durableEnd }

// Failed is the error that fenced the replica's writes, if any.
func (r *Replica) Failed() error { return r.failed }

// Offline reports whether reads are refused too.
func (r *Replica) Offline() bool { return r.offline }

// Closed reports whether Close ran.
func (r *Replica) Closed() bool { return r.closed }

// LeaderSnapshot is a copy of the replication state while leading.
func (r *Replica) LeaderSnapshot() (replication.Snapshot, bool) {
	if r.leader == nil {
		return replication.Snapshot{}, false
	}
	return r.leader.Snapshot(), true
}

// Producers lists the idempotent-producer table while leading
// (DescribeProducers).
func (r *Replica) Producers() ([]producer.Entry, error) {
	if r.closed || r.leader == nil {
		return nil, kerr.NotLeaderForPartition
	}
	return r.producers.Entries(), nil
}

// ExpireProducers drops idempotent producers idle for longer than maxAgeMs.
func (r *Replica) ExpireProducers(nowMs, maxAgeMs int64) {
	r.producers.ExpireOlderThan(nowMs, maxAgeMs)
}

// Apply brings the replica in line with the image: leadership, ISR,
// configuration, in the role the same image gives this broker.
func (r *Replica) Apply(st metadata.Partition, role metadata.ReplicaRole, cfg config.TopicConfig, nowMs int64) (Ready, error) {
	var rd Ready
	r.log.SetConfig(StorageConfig(cfg))
	if r.closed {
		return rd, nil
	}
	r.cfg = cfg
	prev := r.state
	r.state = st
	r.role = role
	switch {
	case role == metadata.RoleLeader && (r.leader == nil || st.LeaderEpoch != prev.LeaderEpoch):
		return r.becomeLeader(st, nowMs)
	case role == metadata.RoleLeader:
		hwMoved, err := r.leader.OnISRCommitted(replication.StateOf(st), nowMs)
		if errors.Is(err, replication.ErrLeaderChanged) {
			return r.becomeLeader(st, nowMs)
		}
		if err != nil {
			return rd, fmt.Errorf("%s: apply ISR change: %w", r.name, err)
		}
		rd.ISRShrunk = len(st.ISR) < len(prev.ISR)
		rd.ISRExpanded = len(st.ISR) > len(prev.ISR)
		if hwMoved {
			r.progress(&rd)
		} else {
			r.completeAcks(&rd)
		}
	default:
		r.becomeFollower(st, &rd)
	}
	return rd, nil
}

// becomeLeader starts a new leader epoch: the epoch starts at the current
// log end, which is recorded in the epoch cache before any append so that
// followers asking where the previous epoch ended get the right answer.
func (r *Replica) becomeLeader(st metadata.Partition, nowMs int64) (Ready, error) {
	var rd Ready
	leo := r.log.LogEndOffset()
	if latest, ok := r.log.Epochs().Latest(); !ok || latest < st.LeaderEpoch {
		if err := r.log.Epochs().Assign(st.LeaderEpoch, leo); err != nil {
			return rd, fmt.Errorf("%s: record leader epoch %d: %w", r.name, st.LeaderEpoch, err)
		}
	}
	durable := r.durableEnd
	if r.cfg.WriteCaching {
		durable = leo
	}
	hw := min(r.hw, leo)
	l, err := replication.NewLeader(replication.Config{
		LocalID:             r.opts.LocalID,
		ReplicaLagTimeMaxMs: max(r.opts.ReplicaLagTimeMaxMs, 1),
		MinInsyncReplicas:   max(r.cfg.MinInsyncReplicas, 1),

		ISRResendBackoffMinMs: r.opts.ISRResendBackoffMinMs,
		ISRResendBackoffMaxMs: r.opts.ISRResendBackoffMaxMs,
	}, replication.StateOf(st), replication.LocalLog{
		LogEndOffset: leo, DurableEnd: durable, HighWatermark: hw, EpochStartOffset: leo,
	}, nowMs)
	if err != nil {
		return rd, fmt.Errorf("%s: become leader: %w", r.name, err)
	}
	r.failAcks(kerr.NotLeaderForPartition, &rd)
	r.producers.ClearVerifications()
	r.leader = l
	r.leaderEpoch = st.LeaderEpoch
	if hw != r.hw {
		r.hw = hw
		rd.HighWatermark, rd.HWChanged = hw, true
	}
	r.opts.Logger.Info("leading partition", "epoch", st.LeaderEpoch, "isr", st.ISR, "log_end", leo, "hw", hw)
	rd.BecameLeader, rd.LeaderEpoch = true, st.LeaderEpoch
	// A waiting fetch that named an older epoch is now fenced: it is
	// answered now (as Kafka completes a DelayedFetch whose leader
	// changed), not at its max wait.
	rd.WakeFollowers, rd.WakeConsumers = true, true
	r.progress(&rd)
	return rd, nil
}

// becomeFollower ends leadership: the replica follows the image's leader
// (RoleFollower) or waits, neither leading nor fetching (RoleNone).
func (r *Replica) becomeFollower(st metadata.Partition, rd *Ready) {
	if r.leader != nil {
		r.opts.Logger.Info("no longer leading partition", "role", r.role, "leader", st.Leader, "epoch", st.LeaderEpoch)
		rd.Resigned = true
	}
	r.leader = nil
	r.producers.ClearVerifications()
	r.leaderEpoch = st.LeaderEpoch
	rd.LeaderEpoch = st.LeaderEpoch
	r.failAcks(kerr.NotLeaderForPartition, rd)
	// Waiting fetches learn NOT_LEADER_OR_FOLLOWER (or the new epoch)
	// now, not at their max wait.
	rd.WakeFollowers, rd.WakeConsumers = true, true
}

func failed(id WaiterID, done func(api.ProduceResult), err error) Answer {
	return Answer{ID: id, Done: done, Result: api.ProduceResult{Err: err, BaseOffset: -1, LogAppendTime: -1},
		AfterHandover: errors.Is(err, kerr.KafkaStorageError)}
}

// Produce appends the batches and answers once the acks the client asked
// for are satisfied (at once, or in a later Ready). The returned id names
// this request's answer among the Ready's: the wrapper may call it
// synchronously, and must run the others outside the caller's locks.
func (r *Replica) Produce(req api.ProduceParams, done func(api.ProduceResult), nowMs int64) (WaiterID, Ready) {
	var rd Ready
	r.nextID++
	id := r.nextID
	if r.closed || r.leader == nil {
		rd.Answers = append(rd.Answers, failed(id, done, kerr.NotLeaderForPartition))
		return id, rd
	}
	if r.failed != nil {
		rd.Answers = append(rd.Answers, failed(id, done, fmt.Errorf("%w: %v", kerr.KafkaStorageError, r.failed)))
		return id, rd
	}
	if req.Acks == -1 {
		if err := r.leader.CheckAcksAll(); err != nil {
			rd.Answers = append(rd.Answers, failed(id, done, err))
			return id, rd
		}
	}
	res := api.ProduceResult{BaseOffset: -1, LogAppendTime: -1}
	var target int64
	for i, b := range req.Batches {
		h, err := batch.ParseHeader(b)
		if err != nil { // validated by the handler; a failure here is a bug
			rd.Answers = append(rd.Answers, failed(id, done, fmt.Errorf("%w: %v", kerr.CorruptMessage, err)))
			return id, rd
		}
		check := r.producers.Check
		switch {
		case req.Coordinator && req.VerifyTxn:
			check = func(h batch.Header) (producer.Decision, error) {
				return r.producers.CheckCoordinatorVerified(h, req.VerificationGuard)
			}
		case req.Coordinator:
			check = r.producers.CheckCoordinator
		case req.VerifyTxn:
			check = func(h batch.Header) (producer.Decision, error) {
				return r.producers.CheckVerified(h, req.VerificationGuard)
			}
		}
		dec, err := check(h)
		if err != nil {
			r.logProducerRefusal(h, err)
			rd.Answers = append(rd.Answers, failed(id, done, err))
			return id, rd
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
		if r.cfg.MessageTimestampType == "LogAppendTime" {
			batch.SetLogAppendTime(b, nowMs)
			res.LogAppendTime = nowMs
		}
		ar, err := r.log.AppendValidated(b, r.leaderEpoch, nowMs)
		if err != nil {
			r.appendFailed(id, done, err, &rd)
			return id, rd
		}
		h.BaseOffset = ar.BaseOffset
		r.producers.Update(h) // a data batch: Produce refuses control batches
		if i == 0 {
			res.BaseOffset = ar.BaseOffset
		}
		target = max(target, ar.LastOffset+1)
		rd.MessagesIn += int64(h.RecordCount)
		rd.BytesIn += int64(len(b))
	}
	res.LogStartOffset = r.log.LogStartOffset()
	if rd.MessagesIn > 0 {
		r.afterAppend(rd.MessagesIn, &rd)
	}
	w := &waiter{id: id, target: target, all: req.Acks == -1, result: res, done: done}
	if req.Acks == 0 || r.ackSatisfied(w) {
		rd.Answers = append(rd.Answers, Answer{ID: id, Done: done, Result: w.result})
		if w.all && w.result.Err == nil {
			rd.AcksAll = append(rd.AcksAll, target)
		}
		return id, rd
	}
	r.park(w, req.Timeout.Milliseconds(), &rd)
	return id, rd
}

// appendFailed answers a leader append the log refused: KAFKA_STORAGE_ERROR,
// held for the handover when the disk failed.
func (r *Replica) appendFailed(id WaiterID, done func(api.ProduceResult), err error, rd *Ready) {
	r.opts.Logger.Error("append failed", "err", err)
	if IsDiskFailure(err) {
		rd.DiskFailed = err
	}
	rd.Answers = append(rd.Answers, failed(id, done, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)))
	rd.Answers[len(rd.Answers)-1].AfterHandover = rd.DiskFailed != nil
}

func (r *Replica) park(w *waiter, timeoutMs int64, rd *Ready) {
	r.waiters = append(r.waiters, w)
	rd.Timeouts = append(rd.Timeouts, Timeout{ID: w.id, AfterMs: timeoutMs})
}

// AwaitCommitted answers done(nil) once the high watermark reaches target,
// or done(err) when leadership is lost, the log fails or the timeout
// passes. A group coordinator loaded from the log waits for it before
// answering. Unlike an acks=all produce it does not check
// min.insync.replicas: nothing is written, and records below the high
// watermark are committed whatever the ISR's size (failing here would only
// make the coordinator reload, again and again).
func (r *Replica) AwaitCommitted(target, timeoutMs int64, done func(error)) (WaiterID, Ready) {
	var rd Ready
	r.nextID++
	id := r.nextID
	answer := func(res api.ProduceResult) { done(res.Err) }
	switch {
	case r.closed || r.leader == nil:
		rd.Answers = append(rd.Answers, failed(id, answer, kerr.NotLeaderForPartition))
	case r.leader.HighWatermark() >= target:
		rd.Answers = append(rd.Answers, Answer{ID: id, Done: answer})
	default:
		r.park(&waiter{id: id, target: target, committed: true, done: answer}, timeoutMs, &rd)
	}
	return id, rd
}

// Expire answers a waiter whose request timed out; nothing if it was
// answered already.
func (r *Replica) Expire(id WaiterID) Ready {
	var rd Ready
	i := slices.IndexFunc(r.waiters, func(w *waiter) bool { return w.id == id })
	if i < 0 {
		return rd
	}
	w := r.waiters[i]
	r.waiters = slices.Delete(r.waiters, i, i+1)
	rd.Answers = append(rd.Answers, Answer{ID: id, Done: w.done,
		Result: api.ProduceResult{Err: kerr.RequestTimedOut, BaseOffset: -1, LogAppendTime: -1}})
	return rd
}

// ackSatisfied reports whether w can be answered now, setting its error
// for acks=all when the ISR that has it is smaller than
// min.insync.replicas.
func (r *Replica) ackSatisfied(w *waiter) bool {
	if w.committed {
		return r.leader.HighWatermark() >= w.target
	}
	if !w.all {
		return r.durableEnd >= w.target
	}
	done, err := r.leader.AckReady(w.target)
	if done && err != nil {
		w.result.Err = err
	}
	return done
}

// afterAppend decides how new data becomes durable. With the default
// contract the group-committed fsync does it; with write.caching the log
// end counts as durable now and fsync follows the topic's flush.messages /
// flush.ms.
func (r *Replica) afterAppend(messages int64, rd *Ready) {
	leo := r.log.LogEndOffset()
	if err := r.leader.OnLocalAppend(leo, r.opts.QuietFetchMs); err != nil {
		r.broken(rd, "replication state refused an append: %v", err)
	}
	rd.WakeFollowers = true // consumers wait for the high watermark, not for the data
	if !r.cfg.WriteCaching {
		rd.Sync = true
		return
	}
	r.durableEnd = leo
	if _, err := r.leader.OnLocalDurable(leo); err != nil {
		r.broken(rd, "replication state refused a durable end: %v", err)
	}
	r.progress(rd)
	r.unflushed += messages
	if r.cfg.FlushMessages > 0 && r.unflushed >= r.cfg.FlushMessages {
		r.unflushed = 0
		rd.Sync = true
		return
	}
	if !r.flushArmed && r.cfg.FlushMs > 0 && r.cfg.FlushMs < 24*3600*1000 {
		r.flushArmed = true
		rd.FlushAfterMs = r.cfg.FlushMs
	}
}

// FlushTimer is write.caching's flush.ms timer firing: an fsync is due.
func (r *Replica) FlushTimer() Ready {
	r.flushArmed = false
	r.unflushed = 0
	return Ready{Sync: !r.closed}
}

// Synced reports the result of a queued fsync: durable is the log's
// durable end after it.
func (r *Replica) Synced(durable int64, err error) Ready {
	var rd Ready
	if r.closed {
		// Stopped while the fsync ran (its wrapper runs it outside its
		// lock): the log was closed under it, deliberately (a replica
		// reassigned away, a broker stopping), which is no disk failure,
		// and Close already answered every waiting produce.
		return rd
	}
	if err != nil {
		r.fail(err, &rd)
		return rd
	}
	// A truncation may have run between the fsync and this report (the
	// replica lost leadership, truncated as a follower, and leads again):
	// what the log holds durably now bounds what the fsync covered.
	durable = min(durable, r.log.DurableEndOffset())
	if r.cfg.WriteCaching || durable <= r.durableEnd {
		return rd
	}
	r.durableEnd = durable
	if r.leader != nil {
		if _, err := r.leader.OnLocalDurable(durable); err != nil {
			r.broken(&rd, "replication state refused a durable end: %v", err)
		}
		r.progress(&rd)
	}
	return rd
}

// fail fences the replica after an fsync error: once fsync has failed,
// the page cache may not match the disk, so nothing more is written or
// acknowledged until a restart re-reads the log.
func (r *Replica) fail(err error, rd *Ready) {
	if r.failed == nil {
		r.failed = err
		r.opts.Logger.Error("fsync failed; partition refuses writes until restart", "err", err)
	}
	rd.DiskFailed = err
	r.failAcks(fmt.Errorf("%w: %v", kerr.KafkaStorageError, err), rd)
}

// SetOffline fences the replica when its log directory went offline:
// writes fail as after a failed fsync, and reads fail too, each with
// KAFKA_STORAGE_ERROR.
func (r *Replica) SetOffline(err error) Ready {
	var rd Ready
	r.offline = true
	if r.failed == nil {
		r.failed = err
	}
	r.failAcks(fmt.Errorf("%w: %v", kerr.KafkaStorageError, err), &rd)
	return rd
}

// broken reports an impossible state (invariant.Broken panics here with
// the invariants build tag) and fences the replica: it stops serving
// rather than serve wrong data.
func (r *Replica) broken(rd *Ready, format string, args ...any) {
	msg := invariant.Broken("%s: "+format, append([]any{r.name}, args...)...)
	rd.Violations = append(rd.Violations, msg)
	r.opts.Logger.Error("invariant broken; partition fenced", "violation", msg)
	if r.failed == nil {
		r.failed = errors.New(msg)
	}
	r.offline = true
}

// progress publishes the leader's high watermark, completes the
// acknowledgements it allows and wakes waiting fetches.
func (r *Replica) progress(rd *Ready) {
	if r.leader != nil {
		if hw := r.leader.HighWatermark(); hw > r.hw {
			r.hw = hw
			rd.HighWatermark, rd.HWChanged = hw, true
			rd.WakeConsumers = true
		} else if hw < r.hw {
			r.broken(rd, "leader high watermark %d below the published %d", hw, r.hw)
		}
	}
	r.completeAcks(rd)
}

func (r *Replica) completeAcks(rd *Ready) {
	if r.leader == nil || len(r.waiters) == 0 {
		return
	}
	kept := r.waiters[:0]
	for _, w := range r.waiters {
		if !r.ackSatisfied(w) {
			kept = append(kept, w)
			continue
		}
		rd.Answers = append(rd.Answers, Answer{ID: w.id, Done: w.done, Result: w.result})
		if w.all && w.result.Err == nil {
			rd.AcksAll = append(rd.AcksAll, w.target)
		}
	}
	clear(r.waiters[len(kept):])
	r.waiters = kept
}

func (r *Replica) failAcks(err error, rd *Ready) {
	for _, w := range r.waiters {
		rd.Answers = append(rd.Answers, failed(w.id, w.done, err))
	}
	r.waiters = nil
}

// OnFollowerFetch records a follower's position (the offset it fetches
// from is what it holds durably) and proposes an ISR change if one is due.
func (r *Replica) OnFollowerFetch(id int32, offset, nowMs int64, eligible func(int32) bool) (Ready, error) {
	var rd Ready
	if r.leader == nil || !slices.Contains(r.state.Replicas, id) {
		return rd, kerr.NotLeaderForPartition
	}
	hwMoved, err := r.leader.OnFollowerFetch(id, offset, nowMs)
	if err != nil {
		return rd, fmt.Errorf("%w: %v", kerr.OffsetOutOfRange, err)
	}
	if hwMoved {
		r.progress(&rd)
	}
	r.maybePropose(nowMs, eligible, &rd)
	return rd, nil
}

// Tick runs the time-driven part of replication: ISR shrinks for
// followers that stopped catching up. Its Ready holds nothing but
// Propose, and changes nothing else: a wrapper ticking thousands of
// partitions may skip carrying out a Ready without one.
func (r *Replica) Tick(nowMs int64, eligible func(int32) bool) Ready {
	var rd Ready
	if r.leader != nil && !r.closed {
		r.maybePropose(nowMs, eligible, &rd)
	}
	return rd
}

func (r *Replica) maybePropose(nowMs int64, eligible func(int32) bool, rd *Ready) {
	change := r.leader.Tick(nowMs, eligible)
	if change == nil {
		return
	}
	r.opts.Logger.Info("proposing ISR change", "isr", r.state.ISR, "new_isr", change.NewISR,
		"leader_epoch", change.LeaderEpoch, "partition_epoch", change.PartitionEpoch)
	rd.Propose = change
}

// OnISRAnswer takes the outcome of one send of an ISR proposal (nil: the
// controller accepted it, and the image brings the committed state). An
// unknown outcome asks for a resend after the replication core's backoff;
// a refusal releases the proposal.
func (r *Replica) OnISRAnswer(change replication.ISRChange, err error) Ready {
	var rd Ready
	if r.leader == nil || r.closed {
		return rd
	}
	after, hwMoved := r.leader.OnISRAnswer(change, err)
	switch {
	case after > 0:
		r.opts.Logger.Info("ISR change outcome unknown; resending", "new_isr", change.NewISR, "after_ms", after, "err", err)
		r.resendSeq++
		r.resendWaiting = true
		rd.Resend = &ISRResend{Change: change, AfterMs: after, Seq: r.resendSeq}
	case err != nil:
		r.opts.Logger.Warn("ISR change not applied", "new_isr", change.NewISR, "err", err)
	}
	if hwMoved {
		r.progress(&rd)
	}
	return rd
}

// ResendISR is resend timer seq firing: the proposal goes again while it
// is still the one pending (metadata may have settled it meanwhile). A
// timer that ControllerChanged overtook does nothing.
func (r *Replica) ResendISR(change replication.ISRChange, seq uint64) Ready {
	var rd Ready
	if seq != r.resendSeq || !r.resendWaiting {
		return rd
	}
	r.resendWaiting = false
	if r.leader != nil && !r.closed && r.leader.IsPending(change) {
		rd.Propose = &change
	}
	return rd
}

// ControllerChanged reports a new active controller. A proposal waiting
// out its resend backoff goes to it at once, and the backoff starts over:
// the backoff spaced sends to a controller that did not answer (Kafka's
// AlterPartitionManager likewise sends its pending items when the
// controller changes). A send in flight is left to its answer.
func (r *Replica) ControllerChanged() Ready {
	var rd Ready
	if r.leader == nil || r.closed || !r.resendWaiting {
		return rd
	}
	r.resendWaiting = false
	if change, ok := r.leader.OnControllerChange(); ok {
		rd.Propose = &change
	}
	return rd
}

// CheckLeaderEpoch fences requests by the caller's view of the leader
// epoch (KIP-320): an older epoch means the caller missed a leader change,
// a newer one that this broker has not learnt of it yet. -1 skips it.
func (r *Replica) CheckLeaderEpoch(current int32) error {
	if current < 0 {
		return nil
	}
	return replication.CheckLeaderEpoch(current, r.leaderEpoch)
}

// AcksAllWritable says why an acks=all produce would be refused right now
// (nil if it would be taken).
func (r *Replica) AcksAllWritable() error {
	switch {
	case r.closed || r.leader == nil:
		return kerr.NotLeaderForPartition
	case r.failed != nil:
		return fmt.Errorf("%w: %v", kerr.KafkaStorageError, r.failed)
	}
	return r.leader.CheckAcksAll()
}

// Close stops the replica: waiting produces fail with
// NOT_LEADER_OR_FOLLOWER. The wrapper closes the log afterwards.
func (r *Replica) Close() Ready {
	var rd Ready
	if r.closed {
		return rd
	}
	r.closed = true
	if r.leader != nil {
		rd.Resigned = true
	}
	r.leader = nil
	r.failAcks(kerr.NotLeaderForPartition, &rd)
	rd.WakeFollowers, rd.WakeConsumers = true, true
	return rd
}

// IsDiskFailure tells a failed write or fsync of a log (the disk's fault)
// from a refusal of the data itself or of the caller, which says nothing
// about the disk, and from a write that found the disk full.
func IsDiskFailure(err error) bool {
	switch {
	case err == nil,
		IsDiskFull(err),
		errors.Is(err, storage.ErrInvalidBatch),
		errors.Is(err, storage.ErrBatchTooLarge),
		errors.Is(err, storage.ErrStaleEpoch),
		errors.Is(err, storage.ErrOffsetMismatch),
		errors.Is(err, storage.ErrOffsetOutOfRange),
		errors.Is(err, storage.ErrCorrupt),
		errors.Is(err, storage.ErrClosed):
		return false
	}
	return true
}

// IsDiskFull reports a write (an append, a segment roll) that failed only
// because the filesystem is full: the log undid it (storage truncates a
// partial write away, and fails the log when it cannot), so the log is
// intact and only that write is refused. Unlike EIO, ENOSPC says nothing
// about what the disk holds, so the directory stays online: the produce
// answers KAFKA_STORAGE_ERROR, which clients retry, reads and everything
// else keep serving, and writes succeed again once space is freed (the
// broker refuses them earlier, at a free-space floor: node/diskspace.go).
// An fsync that fails with ENOSPC may have lost written pages, so it still
// takes the directory offline (Synced does not ask).
func IsDiskFull(err error) bool {
	return (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) && !errors.Is(err, storage.ErrLogFailed)
}

// logProducerRefusal logs, at debug level, a batch the producer state
// refused, with the producer's state here: what the client sent against
// what the partition expected.
func (r *Replica) logProducerRefusal(h batch.Header, err error) {
	if !r.opts.Logger.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	attrs := []any{"producer_id", h.ProducerID, "epoch", h.ProducerEpoch, "base_sequence", h.BaseSequence,
		"last_sequence", h.LastSequence(), "transactional", h.IsTransactional(), "err", err}
	if e, ok := r.producers.Lookup(h.ProducerID); ok {
		last := int32(-1)
		if n := len(e.Batches); n > 0 {
			last = e.Batches[n-1].LastSeq
		}
		attrs = append(attrs, "state_epoch", e.Epoch, "state_last_sequence", last, "state_batches", len(e.Batches),
			"state_txn_first_offset", e.CurrentTxnFirstOffset)
	}
	r.opts.Logger.Debug("produce refused by producer state", attrs...)
}
