package node

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/grouphost"
)

// groupCoordinator wraps the grouphost.Host of one __consumer_offsets
// partition led by this broker, in one leader epoch, with a mutex, timers
// and goroutines: it loads the partition on a goroutine, carries out each
// Ready (appends through the partition's produce, waits on its high
// watermark, arms the tick timer) and reloads after a failed write.
//
// Locking: mu serialises every call into the host and the appends of its
// records, so records reach the log in the order the coordinator made
// them. Answers are sent after mu is released; write outcomes come back
// on their own goroutine, since the append's completion may run while mu
// is held (inside the append).
type groupCoordinator struct {
	rt    *groupRuntime
	part  *partition
	epoch int32

	mu   sync.Mutex
	host *grouphost.Host
	// tick fires at the host's TickAt; expire every
	// offsets.retention.check.interval.ms. Nil until loaded.
	tick   *time.Timer
	expire *time.Timer
}

var _ grouphost.Handle = (*groupCoordinator)(nil)

func newGroupCoordinator(rt *groupRuntime, p *partition, epoch int32) *groupCoordinator {
	return &groupCoordinator{rt: rt, part: p, epoch: epoch, host: grouphost.New(p.name())}
}

func nowMs() int64 { return time.Now().UnixMilli() }

func (gc *groupCoordinator) partitionOf() *partition { return gc.part }
func (gc *groupCoordinator) leaderEpoch() int32      { return gc.epoch }

func (gc *groupCoordinator) isStopped() bool {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	return gc.host.Stopped()
}

// load rebuilds the coordinator from the partition's log (outside mu:
// requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS) and activates it.
func (gc *groupCoordinator) load() {
	start := time.Now()
	l, err := grouphost.Replay(gc.rt.cfg, randomNonce(), gc.part.log, gc.part.name(), nowMs())
	if err != nil {
		gc.mu.Lock()
		if gc.host.Stopped() {
			gc.mu.Unlock()
			return
		}
		rd := gc.host.Stop()
		gc.mu.Unlock()
		gc.finish(rd)
		gc.rt.b.log.Error("loading consumer groups failed", "partition", gc.part.name(), "err", err)
		// The partition may be fine again later (a transient read
		// error); do not retry in a tight loop.
		gc.rt.replaceFailed(gc, loadRetryPeriod)
		return
	}
	// Counted before the host shares the coordinator with other calls.
	groups := len(l.Coordinator.ListGroups(nil))
	activated := false
	_ = gc.Do(func(h *grouphost.Host, now int64) (grouphost.Ready, error) {
		if h.Stopped() {
			return grouphost.Ready{}, nil
		}
		activated = true
		gc.tick = time.AfterFunc(time.Hour, gc.onTick)
		gc.expire = time.AfterFunc(gc.expireInterval(), gc.onExpire)
		return h.Activate(now, l), nil
	})
	if activated {
		gc.rt.b.log.Info("coordinating consumer groups", "partition", gc.part.name(), "epoch", gc.epoch,
			"groups", groups, "load_time", time.Since(start).Round(time.Millisecond))
	}
}

func randomNonce() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:])
}

func (gc *groupCoordinator) expireInterval() time.Duration {
	if d := gc.rt.b.cfg.OffsetsRetentionCheckInterval; d > 0 {
		return d
	}
	return 10 * time.Minute
}

// read runs fn on the loaded coordinator under mu (for this broker's own
// views, such as the group lag metrics).
func (gc *groupCoordinator) read(fn func(c *group.Coordinator)) error {
	return gc.Do(func(h *grouphost.Host, _ int64) (grouphost.Ready, error) { return grouphost.Ready{}, h.Read(fn) })
}

// Writable is grouphost.Handle's.
func (gc *groupCoordinator) Writable() error { return gc.part.acksAllWritable() }

// Do is grouphost.Handle's: op runs under mu, the Ready's writes start
// under it too (log order), its answers go out after.
func (gc *groupCoordinator) Do(op func(h *grouphost.Host, now int64) (grouphost.Ready, error)) error {
	gc.mu.Lock()
	rd, err := op(gc.host, nowMs())
	if err != nil {
		gc.mu.Unlock()
		return err
	}
	gc.startLocked(rd)
	gc.mu.Unlock()
	gc.finish(rd)
	return nil
}

func (gc *groupCoordinator) startLocked(rd grouphost.Ready) {
	for _, w := range rd.Writes {
		done := func(err error) { go gc.written(w.ID, err) }
		if w.Records == nil {
			gc.part.awaitCommitted(w.AwaitCommitted, groupWriteTimeout, done)
			continue
		}
		gc.appendLocked(w.Records, w.Txn, done)
	}
	if gc.tick == nil || !gc.host.Active() {
		return
	}
	if !rd.HasTick {
		gc.tick.Stop()
		return
	}
	// Timers never fire early, so at the firing now >= deadline and the
	// coordinator's timer is due: no spinning on a deadline in the past.
	gc.tick.Reset(max(time.Until(time.UnixMilli(rd.TickAt)), 0))
}

func (gc *groupCoordinator) finish(rd grouphost.Ready) {
	for _, p := range rd.Problems {
		gc.rt.b.log.Error("group coordinator invariant", "partition", gc.part.name(), "problem", p)
	}
	for _, w := range rd.Warnings {
		gc.rt.b.log.Warn(w)
	}
	for _, send := range rd.Send {
		send()
	}
	if rd.Reload != nil {
		go gc.fail()
	}
}

func (gc *groupCoordinator) written(id uint64, err error) {
	_ = gc.Do(func(h *grouphost.Host, now int64) (grouphost.Ready, error) { return h.Written(now, id, err), nil })
}

// appendLocked appends records as one batch with acks=all (a
// transactional one when txn is set); done gets the outcome. produce
// appends under the partition lock before it returns, so the log order is
// the order of calls under gc.mu.
func (gc *groupCoordinator) appendLocked(recs []group.Record, txn *group.TxnBatch, done func(error)) {
	req := api.ProduceParams{
		Topic: gc.part.id, Partition: gc.part.index,
		Batches: [][]byte{grouphost.BuildBatch(recs, txn, nowMs())},
		Acks:    -1, Timeout: groupWriteTimeout, Coordinator: true,
	}
	if txn != nil {
		req.VerifyTxn, req.VerificationGuard = txn.VerifyTxn, txn.VerificationGuard
	}
	gc.part.produce(req, func(res api.ProduceResult) { done(res.Err) })
}

func (gc *groupCoordinator) onTick() {
	_ = gc.Do(func(h *grouphost.Host, now int64) (grouphost.Ready, error) { return h.Tick(now) })
}

func (gc *groupCoordinator) onExpire() {
	err := gc.Do(func(h *grouphost.Host, now int64) (grouphost.Ready, error) { return h.ExpireOffsets(now) })
	if err == nil {
		gc.mu.Lock()
		if gc.host.Active() {
			gc.expire.Reset(gc.expireInterval())
		}
		gc.mu.Unlock()
	}
}

// stop unloads the coordinator for good: parked requests are answered
// with NOT_COORDINATOR so their clients look for the new coordinator.
func (gc *groupCoordinator) stop(why string) {
	gc.mu.Lock()
	if gc.host.Stopped() {
		gc.mu.Unlock()
		return
	}
	wasActive := gc.host.Active()
	rd := gc.host.Stop()
	if gc.tick != nil {
		gc.tick.Stop()
		gc.expire.Stop()
	}
	gc.mu.Unlock()
	gc.finish(rd)
	if wasActive {
		gc.rt.b.log.Info("stopped coordinating consumer groups", "partition", gc.part.name(), "epoch", gc.epoch, "why", why)
	}
}

// fail handles a failed write: the coordinator's memory ran ahead of the
// log, so it is unloaded and the partition loaded again from the log.
func (gc *groupCoordinator) fail() {
	if gc.isStopped() {
		return
	}
	gc.stop("write failed")
	gc.rt.replaceFailed(gc, grouphost.ReloadBackoff)
}
