package node

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/replica"
	"github.com/skein-log/skein/internal/replicafetch"
	"github.com/skein-log/skein/internal/replication"
	"github.com/skein-log/skein/internal/storage"
)

// maxProducersPerPartition bounds the idempotent-producer table of one
// partition (a few hundred bytes per producer).
const maxProducersPerPartition = 100_000

// partition is the runtime of one partition replica on this broker: the
// replica core (internal/replica, which decides everything) wrapped with a
// mutex, timers, the flusher and goroutines. Every event takes mu, steps
// the core and carries out its Ready; answers run after mu is released.
//
// Locking: mu guards core, timers and watchers. The log has its own lock
// and is safe to read without mu; appends happen under mu (inside the
// core) so that the producer table and the log never disagree. Sync runs
// without mu (group commit). Lock order: partition.mu, then fetchWaiter.mu.
type partition struct {
	b     *Broker
	topic string
	id    metadata.TopicID
	index int32
	log   *storage.Log
	// logDir is the log directory holding the partition's directory.
	logDir string

	// highWatermark is the core's, published for readers without mu:
	// consumers read below it.
	highWatermark atomic.Int64
	// lastStable is the core's last stable offset, published with the
	// high watermark: read_committed consumers read below it.
	lastStable atomic.Int64
	// offline is set when the partition's log directory went offline
	// (diskfail.go) or an invariant broke: reads fail too. Readable
	// without mu.
	offline atomic.Bool
	// generation counts the steps that may change what a fetch of this
	// partition answers (high watermark, last stable offset, new data, a
	// leadership change: whatever wakes waiting fetches). A parked fetch
	// whose partitions' generations did not move answers from its last
	// read rather than reading them all again (fetchWaiter.unchanged).
	generation atomic.Uint64
	// dataGeneration counts the steps that wake followers' fetches (new
	// data, a leadership change, the close): all a parked follower fetch
	// is poked for. A follower fetch that registers checks it rather than
	// generation, since the high watermark its own position just moved
	// (a bump of generation) would have it read again for nothing: a
	// goroutine and a read of every partition per acknowledged record.
	dataGeneration atomic.Uint64
	// quiet publishes the core's Quiet (replica.Quiet) for fetches read
	// without mu: while it holds one, a follower fetch at its log end in
	// its epoch changes nothing but the follower's fetch time, which it
	// leaves in the quiet fetches instead of taking mu (admitQuiet), and
	// the ISR tick has nothing to decide.
	quiet quietState
	// tickIdle is the core's TickIdle, published with quiet: the ISR
	// tick skips the partition without its lock (most partitions of a
	// broker are followed, not led, and each lock was a cache miss).
	tickIdle atomic.Bool

	mu   sync.Mutex
	core *replica.Replica
	// watchers are the fetches parked on the partition, in no order.
	// Each knows its place here (fetchWaiter.slots), so that parking and
	// unparking, which every idle follower fetch does on every partition
	// of its session, append and swap-remove rather than hash.
	watchers []watch
	// timeouts are the request timeouts of produces waiting for acks.
	timeouts   map[replica.WaiterID]*time.Timer
	flushTimer *time.Timer
}

// openPartition opens the replica of partition p of t in dir; fresh says
// the caller just created dir (createPartitionDir) and syncs its
// filesystem before the replica is used (storage.Options.Fresh).
func openPartition(b *Broker, t *metadata.Topic, p metadata.Partition, cfg config.TopicConfig, dir string, fresh bool) (*partition, error) {
	name := fmt.Sprintf("%s-%d", t.Name, p.Index)
	logDir := filepath.Dir(filepath.Clean(dir))
	var pt *partition
	core, err := replica.Open(b.fs, dir, name, cfg, replica.Options{
		LocalID:             b.cfg.NodeID,
		ReplicaLagTimeMaxMs: b.cfg.ReplicaLagTimeMax.Milliseconds(),
		MaxProducers:        maxProducersPerPartition,
		Logger:              b.logger(loggerPartition),
		// Asked only under mu, once pt is set (an append as leader).
		QuietFetchMs: func(id int32) int64 { return pt.quietFetchMs(id) },
		Fresh:        fresh,
		// The zeros ahead of the log end take space like the writes the
		// floor refuses, so they count against it (a refill is skipped
		// rather than written into the floor's headroom).
		MayFillAhead:    func(n int64) bool { return b.checkFreeSpace(logDir, n) == nil },
		PageCacheWindow: b.cfg.LogPageCacheWindowBytes,
	})
	if err != nil {
		return nil, err
	}
	pt = &partition{
		b: b, topic: t.Name, id: t.ID, index: p.Index, log: core.Log(), core: core,
		logDir:   logDir,
		timeouts: map[replica.WaiterID]*time.Timer{},
	}
	pt.highWatermark.Store(core.HighWatermark())
	pt.lastStable.Store(core.LastStableOffset())
	pt.quiet.at.Store(-1)
	pt.quiet.fetches.Store(&quietFetches{})
	pt.tickIdle.Store(core.TickIdle())
	return pt, nil
}

// quietFetches are the followers' latest quiet fetch times (replica.
// Options.QuietFetchMs), by follower in replica order; replaced, not
// changed, when the replica set changes (a time lost then only makes the
// follower's caught-up time earlier, never later).
type quietFetches struct {
	ids []int32
	ms  []atomic.Int64
}

// quietFetchMs is replica.Options.QuietFetchMs, read under mu.
func (p *partition) quietFetchMs(id int32) int64 {
	q := p.quiet.fetches.Load()
	for i, f := range q.ids {
		if f == id {
			return q.ms[i].Load()
		}
	}
	return math.MinInt64
}

// publishQuiet publishes the core's Quiet, under mu, after every step
// that may change it.
func (p *partition) publishQuiet() {
	if idle := p.core.TickIdle(); idle != p.tickIdle.Load() {
		p.tickIdle.Store(idle)
	}
	q := p.core.Quiet()
	if !q.OK {
		p.quiet.publish(q, nil, true)
		return
	}
	ids, same := p.core.Followers(p.quiet.fetches.Load().ids)
	p.quiet.publish(q, ids, same)
}

// admitQuiet admits a follower's fetch of fp without mu when the
// published Quiet lets it (replica.QuietAdmits), keeping its time as the
// follower's latest quiet fetch.
func (p *partition) admitQuiet(fp api.FetchPartition, replicaID int32, nowMs int64) bool {
	snap, ok := p.quiet.load()
	if !ok || snap.at != fp.Offset || !p.quiet.unchanged(snap) {
		return false
	}
	i, ok := replica.QuietAdmits(replica.Quiet{OK: true, LogEnd: snap.at, Epoch: snap.epoch, Followers: snap.fetches.ids}, fp, replicaID)
	if !ok {
		return false
	}
	snap.fetches.ms[i].Store(nowMs)
	return true
}

// quietState is a partition's published replica.Quiet: its log end (at,
// -1 when not quiet), its epoch and its followers with their latest quiet
// fetch times. One writer at a time (under the partition's mu); readers
// take no lock. The epoch and the followers change together under seq, a
// sequence lock: odd while they change, bumped again after. A reader
// that sees the same even seq before and after its loads (load,
// unchanged) has an epoch and followers published together, whatever
// else changed and changed back meanwhile. The log end is one value on
// its own: with the same epoch and followers, either of two log ends
// loaded was quiet.
type quietState struct {
	seq     atomic.Uint64
	at      atomic.Int64
	epoch   atomic.Int32
	fetches atomic.Pointer[quietFetches]
}

// quietSnap is what one reader loaded of a quietState.
type quietSnap struct {
	seq     uint64
	at      int64
	epoch   int32
	fetches *quietFetches
}

// publish makes q the published state; ids are q's followers, same
// whether they are the published ones (whose fetch times are then kept).
func (s *quietState) publish(q replica.Quiet, ids []int32, same bool) {
	at := s.at.Load()
	if !q.OK {
		if at != -1 {
			s.at.Store(-1)
		}
		return
	}
	if s.epoch.Load() != q.Epoch || !same {
		s.seq.Add(1) // odd: a reader meanwhile declines
		s.epoch.Store(q.Epoch)
		if !same {
			s.fetches.Store(&quietFetches{ids: ids, ms: make([]atomic.Int64, len(ids))})
		}
		s.seq.Add(1)
	}
	if at != q.LogEnd {
		s.at.Store(q.LogEnd)
	}
}

// load reads the published state; ok is false when it is not quiet or
// being changed. The snapshot holds only if unchanged says so after it.
func (s *quietState) load() (quietSnap, bool) {
	seq := s.seq.Load()
	if seq&1 != 0 {
		return quietSnap{}, false
	}
	snap := quietSnap{seq: seq, at: s.at.Load(), epoch: s.epoch.Load(), fetches: s.fetches.Load()}
	return snap, snap.at != -1
}

// unchanged reports whether snap's epoch and followers are still the
// published ones, published together.
func (s *quietState) unchanged(snap quietSnap) bool { return s.seq.Load() == snap.seq }

func (p *partition) name() string { return fmt.Sprintf("%s-%d", p.topic, p.index) }

// readyLocked carries out what the core asked for, under mu, and returns
// the answers to deliver once mu is released. Answers held for a disk
// failure's handover are handed over here, under mu: the stop that
// logDirFailed starts takes p.mu (to fence p) before it stops waiting for
// held answers, so they are held in time.
func (p *partition) readyLocked(rd replica.Ready) []replica.Answer {
	p.publishQuiet()
	if rd.HWChanged {
		p.highWatermark.Store(rd.HighWatermark)
	}
	// After the high watermark: a reader loads the LSO first, so it never
	// sees an LSO above the high watermark it loads next.
	lso := p.core.LastStableOffset()
	lsoChanged := p.lastStable.Swap(lso) != lso
	if rd.HWChanged || lsoChanged || rd.WakeFollowers || rd.WakeConsumers {
		// Before the pokes: a waiter that reads the generation after
		// its read either sees this bump or is poked.
		p.generation.Add(1)
		if rd.WakeFollowers {
			p.dataGeneration.Add(1)
		}
	}
	if rd.WakeFollowers || rd.WakeConsumers {
		for _, wt := range p.watchers {
			if fw := wt.w; fw.follower() && rd.WakeFollowers || !fw.follower() && rd.WakeConsumers {
				fw.poke()
			}
		}
	}
	if rd.Sync {
		p.b.flusher.schedule(p)
	}
	if rd.FlushAfterMs > 0 && p.flushTimer == nil {
		p.flushTimer = time.AfterFunc(time.Duration(rd.FlushAfterMs)*time.Millisecond, func() {
			p.mu.Lock()
			p.flushTimer = nil
			answers := p.readyLocked(p.core.FlushTimer())
			p.mu.Unlock()
			p.deliver(answers, 0)
		})
	}
	for _, t := range rd.Timeouts {
		id := t.ID
		p.timeouts[id] = time.AfterFunc(time.Duration(t.AfterMs)*time.Millisecond, func() {
			p.mu.Lock()
			delete(p.timeouts, id)
			answers := p.readyLocked(p.core.Expire(id))
			p.mu.Unlock()
			p.deliver(answers, 0)
		})
	}
	if rd.Propose != nil {
		p.b.proposeISRChange(p, *rd.Propose)
	}
	if rd.Resend != nil {
		change, seq := rd.Resend.Change, rd.Resend.Seq
		time.AfterFunc(time.Duration(rd.Resend.AfterMs)*time.Millisecond, func() {
			select {
			case <-p.b.stop:
				return
			default:
			}
			p.mu.Lock()
			answers := p.readyLocked(p.core.ResendISR(change, seq))
			p.mu.Unlock()
			p.deliver(answers, 0)
		})
	}
	if rd.ISRShrunk {
		p.b.metrics.IncISRShrink()
	}
	if rd.ISRExpanded {
		p.b.metrics.IncISRExpand()
	}
	if len(rd.Violations) > 0 {
		// The core logged each and fenced its writes; reads stop too.
		p.offline.Store(true)
	}
	if rd.DiskFailed != nil {
		p.b.logDirFailed(p, rd.DiskFailed)
	}
	out := rd.Answers[:0:0]
	for _, a := range rd.Answers {
		if t := p.timeouts[a.ID]; t != nil {
			t.Stop()
			delete(p.timeouts, a.ID)
		}
		if a.AfterHandover {
			done := a.Done
			p.b.answerAfterHandover(p, a.Result.Err, func(err error) {
				done(api.ProduceResult{Err: err, BaseOffset: -1, LogAppendTime: -1})
			})
			continue
		}
		out = append(out, a)
	}
	return out
}

// deliver runs answers outside mu: the caller's own (own) in its
// goroutine, the others each in one of their own, since they may take
// locks the caller holds (a group coordinator writing its log).
func (p *partition) deliver(answers []replica.Answer, own replica.WaiterID) {
	for _, a := range answers {
		if own != 0 && a.ID == own {
			a.Done(a.Result)
			continue
		}
		go a.Done(a.Result)
	}
}

// step runs one core event under mu and delivers its answers.
func (p *partition) step(fn func(c *replica.Replica) replica.Ready) {
	p.mu.Lock()
	answers := p.readyLocked(fn(p.core))
	p.mu.Unlock()
	p.deliver(answers, 0)
}

// stepHoldingNothing is step for a caller that holds no lock and waits
// for nothing an answer could need: a flusher worker's fsync report, a
// follower's fetch recording its position (Admit). Those are the events that
// complete acknowledgements on the lone-record path, and their answers
// run in the caller's goroutine, not each in a new one: an answer (a
// Produce handler's callback, a coordinator's) then cannot block on a
// lock the caller holds, and the hand-off to a fresh goroutine, which
// under load waits for a thread to be scheduled, is saved.
func (p *partition) stepHoldingNothing(fn func(c *replica.Replica) replica.Ready) {
	p.mu.Lock()
	answers := p.readyLocked(fn(p.core))
	p.mu.Unlock()
	for _, a := range answers {
		a.Done(a.Result)
	}
}

// apply brings the partition in line with the image: leadership, ISR,
// configuration. Called by reconcile with the partition's entry and the
// role the same image gives this broker.
func (p *partition) apply(st metadata.Partition, role metadata.ReplicaRole, cfg config.TopicConfig, now time.Time) error {
	var err error
	p.step(func(c *replica.Replica) (rd replica.Ready) {
		rd, err = c.Apply(st, role, cfg, now.UnixMilli())
		return rd
	})
	return err
}

// describeProducers lists the producer table of a partition led here.
func (p *partition) describeProducers() ([]api.ProducerState, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	entries, err := p.core.Producers()
	if err != nil {
		return nil, err
	}
	return api.ProducerStates(entries), nil
}

// produce appends the batches and arranges for done to be called when the
// acks the client asked for are satisfied.
func (p *partition) produce(req api.ProduceParams, done func(api.ProduceResult)) {
	now := time.Now()
	p.mu.Lock()
	id, rd := p.core.Produce(req, done, now.UnixMilli())
	answers := p.readyLocked(rd)
	p.mu.Unlock()
	if rd.MessagesIn > 0 {
		p.b.metrics.AddBytesIn(p.topic, rd.BytesIn, rd.MessagesIn)
	}
	p.deliver(answers, id)
}

// startTxnVerification is replica.StartTxnVerification under the
// partition's lock.
func (p *partition) startTxnVerification(producerID int64, epoch int16, tv2 bool) (uint64, bool, error) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.core.StartTxnVerification(producerID, epoch, tv2, now.UnixMilli())
}

// writeTxnMarker appends a transaction marker and calls done once the
// high watermark has passed it (replica.WriteTxnMarker).
func (p *partition) writeTxnMarker(req api.TxnMarkerParams, done func(api.ProduceResult)) {
	now := time.Now()
	p.mu.Lock()
	id, rd := p.core.WriteTxnMarker(req, done, now.UnixMilli())
	answers := p.readyLocked(rd)
	p.mu.Unlock()
	p.deliver(answers, id)
}

// awaitCommitted calls done(nil) once the high watermark reaches target,
// or done(err) when leadership is lost, the log fails or timeout passes
// (replica.AwaitCommitted). A group coordinator loaded from the log waits
// for it before answering (grouphost.Host.Activate asks for the wait,
// groupCoordinator.startLocked carries it out).
func (p *partition) awaitCommitted(target int64, timeout time.Duration, done func(error)) {
	p.mu.Lock()
	id, rd := p.core.AwaitCommitted(target, timeout.Milliseconds(), done)
	answers := p.readyLocked(rd)
	p.mu.Unlock()
	p.deliver(answers, id)
}

// sync is called by the flusher: one fsync covers every batch appended
// before it started.
func (p *partition) sync() {
	start := time.Now()
	durable, err := p.log.Sync()
	p.b.metrics.ObserveFsync(time.Since(start))
	p.stepHoldingNothing(func(c *replica.Replica) replica.Ready { return c.Synced(durable, err) })
	p.dropCache()
}

// dropCache advises the log's durable data outside its page-cache window
// out (storage.Log.DropCache), after the fsync's answers are delivered so
// that the fadvise is off the ack path, and notes the write and what stays
// cached in the broker's budget (pagecache.go), whose goroutine shrinks the
// partitions written least recently when they hold too much together.
func (p *partition) dropCache() {
	p.b.metrics.AddPageCacheDropped(p.log.DropCache())
	p.b.pageCache.noted(p, p.log.CachedBytes())
}

// onFollowerFetch records a follower's position and proposes an ISR change
// if one is due.
func (p *partition) onFollowerFetch(id int32, offset int64, now time.Time) error {
	var err error
	p.stepHoldingNothing(func(c *replica.Replica) (rd replica.Ready) {
		rd, err = c.OnFollowerFetch(id, offset, now.UnixMilli(), p.b.isEligibleReplica)
		return rd
	})
	return err
}

// tick runs the time-driven part of replication: ISR shrinks for
// followers that stopped catching up.
func (p *partition) tick(now time.Time) {
	if p.tickIdle.Load() {
		// Not leading, or quiet: the core's Tick has nothing to decide
		// (replica.Replica.TickIdle).
		return
	}
	p.mu.Lock()
	rd := p.core.Tick(now.UnixMilli(), p.b.isEligibleReplica)
	if rd.Propose == nil {
		// Nothing decided, nothing changed (replica.Replica.Tick): every
		// partition is ticked every second, and carrying out an empty
		// Ready (the last stable offset recomputed) was a tenth of an
		// idle broker's CPU at 10,000 partitions.
		p.mu.Unlock()
		return
	}
	answers := p.readyLocked(rd)
	p.mu.Unlock()
	p.deliver(answers, 0)
}

// onISRAnswer hands the outcome of one send of an ISR proposal to the
// core, which decides whether to resend it and when.
func (p *partition) onISRAnswer(change replication.ISRChange, err error) {
	p.step(func(c *replica.Replica) replica.Ready { return c.OnISRAnswer(change, err) })
}

// controllerChanged tells the core a new controller is active: a proposal
// waiting out its resend backoff goes at once.
func (p *partition) controllerChanged() {
	p.step(func(c *replica.Replica) replica.Ready { return c.ControllerChanged() })
}

// read serves a fetch: whole batches from offset, below the high watermark
// (or the last stable offset, read_committed) for consumers, below the log
// end for followers; with pooled into a buffer from internal/bufpool
// (replica.ReadLog).
func (p *partition) read(offset int64, maxBytes int, minOneBatch bool, mode replica.ReadMode, pooled bool) (api.FetchResult, error) {
	lso := p.lastStable.Load()
	hw := p.highWatermark.Load()
	if p.offline.Load() {
		return api.FetchResult{HighWatermark: hw, LastStableOffset: lso, LogStartOffset: p.log.LogStartOffset()},
			fmt.Errorf("%w: %s: log directory offline", kerr.KafkaStorageError, p.name())
	}
	res, err := replica.ReadLog(p.log, hw, lso, offset, maxBytes, minOneBatch, mode, pooled)
	if errors.Is(err, kerr.KafkaStorageError) {
		p.b.log.Error("read failed", "partition", p.name(), "offset", offset, "err", err)
	}
	return res, err
}

// checkLeaderEpoch fences requests by the caller's view of the leader
// epoch (KIP-320).
func (p *partition) checkLeaderEpoch(current int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.core.CheckLeaderEpoch(current)
}

// acksAllWritable says why an acks=all produce would be refused right now
// (nil if it would be taken).
func (p *partition) acksAllWritable() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.core.AcksAllWritable()
}

func (p *partition) isLeader() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.core.IsLeader()
}

// leadership reports whether this broker leads the partition and the
// leader epoch it last applied.
func (p *partition) leadership() (leading bool, epoch int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.core.IsLeader() && !p.core.Closed(), p.core.LeaderEpoch()
}

// topicConfig is the topic configuration last applied.
func (p *partition) topicConfig() config.TopicConfig {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.core.Config()
}

// expireProducers drops idempotent producers idle for longer than maxAgeMs.
func (p *partition) expireProducers(nowMs, maxAgeMs int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.core.ExpireProducers(nowMs, maxAgeMs)
}

// watch is a fetch parked on a partition: the fetch, and which of its
// request's partitions this is (w.parts[i]). w.slots[i], which only the
// partition's lock guards, is its index in the partition's watchers, or
// -1 while it is not there.
type watch struct {
	w *fetchWaiter
	i int
}

// addWatcher parks w, for its request partition i, on p.
func (p *partition) addWatcher(w *fetchWaiter, i int) {
	p.mu.Lock()
	w.slots[i] = int32(len(p.watchers))
	p.watchers = append(p.watchers, watch{w, i})
	p.mu.Unlock()
}

// removeWatcher unparks w's request partition i from p; it does nothing
// if that is not parked (an answer may unhook before the registration
// got there, and unhooks again after it).
func (p *partition) removeWatcher(w *fetchWaiter, i int) {
	p.mu.Lock()
	if j := w.slots[i]; j >= 0 {
		last := len(p.watchers) - 1
		moved := p.watchers[last]
		p.watchers[j] = moved
		moved.w.slots[moved.i] = j
		p.watchers[last] = watch{}
		p.watchers = p.watchers[:last]
		w.slots[i] = -1
	}
	p.mu.Unlock()
}

// close stops the partition: waiting produces fail with
// NOT_LEADER_OR_FOLLOWER, and the log is closed cleanly. A partition whose
// fsync failed was already reported; closing it is not a new error.
func (p *partition) close() error { return p.closeWith((*storage.Log).Close) }

// closeLeavingDirSync is close for a stopping broker, which makes every
// log's clean-shutdown marker durable at once afterwards
// (storage.Log.CloseLeavingDirSync, then vfs.FS.SyncFS).
func (p *partition) closeLeavingDirSync() error {
	return p.closeWith((*storage.Log).CloseLeavingDirSync)
}

func (p *partition) closeWith(closeLog func(*storage.Log) error) error {
	p.mu.Lock()
	if p.core.Closed() {
		p.mu.Unlock()
		return nil
	}
	if p.flushTimer != nil {
		p.flushTimer.Stop()
	}
	answers := p.readyLocked(p.core.Close())
	failed := p.core.Failed()
	p.mu.Unlock()
	p.deliver(answers, 0)
	err := closeLog(p.log)
	p.b.pageCache.forget(p)
	if failed != nil {
		return nil
	}
	return err
}

// --- the follower side ---

// following reports the leader and epoch this replica follows.
// A partition is what the replica fetcher session follows
// (replicafetch.Replica): reads go to the log, which has its own lock, and
// to the published high watermark; the writes below step the core.
var _ replicafetch.Replica = (*partition)(nil)

func (p *partition) Log() *storage.Log    { return p.log }
func (p *partition) HighWatermark() int64 { return p.highWatermark.Load() }

func (p *partition) following() (leader, epoch int32, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.core.Following()
}

// AppendFromLeader appends batches fetched from the leader, keeping their
// offsets and epochs, makes them durable before the next fetch reports
// them (the fsync runs without mu), and follows the leader's high
// watermark (replica.AppendFromLeader).
func (p *partition) AppendFromLeader(data []byte, leaderHW int64, epoch int32) error {
	if len(data) > 0 {
		if err := p.b.checkFreeSpace(p.logDir, int64(len(data))); err != nil {
			return err
		}
	}
	p.mu.Lock()
	accepted, needSync, rd, appendErr := p.core.AppendFromLeader(data, epoch, time.Now().UnixMilli())
	answers := p.readyLocked(rd)
	p.mu.Unlock()
	p.deliver(answers, 0)
	if !accepted {
		return appendErr
	}
	var durable int64
	var syncErr error
	if needSync {
		start := time.Now()
		durable, syncErr = p.log.Sync()
		p.b.metrics.ObserveFsync(time.Since(start))
	}
	var err error
	p.step(func(c *replica.Replica) (rd replica.Ready) {
		rd, err = c.FollowerSynced(durable, syncErr, leaderHW)
		return rd
	})
	if needSync && syncErr == nil {
		p.dropCache()
	}
	if err != nil {
		return err
	}
	return appendErr
}

// TruncateTo removes the local log from offset on (a divergent tail).
func (p *partition) TruncateTo(offset int64) error {
	var err error
	p.step(func(c *replica.Replica) (rd replica.Ready) {
		rd, err = c.TruncateTo(offset)
		return rd
	})
	return err
}

// RestartAt empties the local log and starts it at offset, when the
// leader no longer has what this replica would fetch next.
func (p *partition) RestartAt(offset int64) error {
	var err error
	p.step(func(c *replica.Replica) (rd replica.Ready) {
		rd, err = c.RestartAt(offset)
		return rd
	})
	return err
}
