package node

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/records"
)

type coordinatorState int8

const (
	coordinatorLoading coordinatorState = iota
	coordinatorActive
	coordinatorStopped
)

// groupCoordinator is the runtime of one group.Coordinator: the groups of
// one __consumer_offsets partition led by this broker, in one leader epoch.
// A new epoch, or a failed write, gets a new groupCoordinator that loads
// the partition again.
//
// Locking: mu serialises every call into the coordinator and the appends of
// its records, so records reach the log in the order the coordinator made
// them. Answers are sent after mu is released, or from the append's
// completion, which never takes mu.
type groupCoordinator struct {
	rt    *groupRuntime
	part  *partition
	epoch int32

	mu    sync.Mutex
	state coordinatorState
	c     *group.Coordinator // set once loaded
	// Parked JoinGroup and SyncGroup requests, until the coordinator's
	// Output answers them.
	parked group.Parked
	// lastWrite is the latest batch of records appended; answers wait for
	// it (see groupWrite).
	lastWrite *groupWrite
	// tick fires at the coordinator's NextDeadline; expire every
	// offsets.retention.check.interval.ms.
	tick   *time.Timer
	expire *time.Timer
}

func newGroupCoordinator(rt *groupRuntime, p *partition, epoch int32) *groupCoordinator {
	return &groupCoordinator{rt: rt, part: p, epoch: epoch}
}

func nowMs() int64 { return time.Now().UnixMilli() }

func (gc *groupCoordinator) isStopped() bool {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	return gc.state == coordinatorStopped
}

// maxLoadBatchBytes bounds the decompressed size of one batch read while
// loading (our own batches are uncompressed and small).
const maxLoadBatchBytes = 64 << 20

// load rebuilds the coordinator from the partition's log, from its start to
// its end as of now: nothing else appends to the partition while it loads
// (the coordinator is the only writer, and clients may not produce to it).
func (gc *groupCoordinator) load() {
	start := time.Now()
	c, err := group.New(gc.rt.cfg, randomNonce())
	var end int64
	if err == nil {
		end, err = gc.replay(c)
	}
	gc.mu.Lock()
	if gc.state != coordinatorLoading {
		gc.mu.Unlock()
		return
	}
	if err != nil {
		gc.state = coordinatorStopped
		gc.mu.Unlock()
		gc.rt.b.log.Error("loading consumer groups failed", "partition", gc.part.name(), "err", err)
		go func() {
			// The partition may be fine again later (a transient read
			// error); do not retry in a tight loop.
			select {
			case <-time.After(time.Second):
				gc.rt.replaceFailed(gc)
			case <-gc.rt.b.stop:
			}
		}()
		return
	}
	gc.c = c
	gc.state = coordinatorActive
	loaded := &groupWrite{}
	gc.lastWrite = loaded
	gc.tick = time.AfterFunc(time.Hour, gc.onTick)
	gc.expire = time.AfterFunc(gc.expireInterval(), gc.onExpire)
	gc.rearmLocked()
	groups := len(c.ListGroups(nil))
	gc.mu.Unlock()
	gc.awaitLoaded(loaded, end)
	gc.rt.b.log.Info("coordinating consumer groups", "partition", gc.part.name(), "epoch", gc.epoch,
		"groups", groups, "load_time", time.Since(start).Round(time.Millisecond))
}

// awaitLoaded finishes loaded, the coordinator's first lastWrite, once
// the records replayed up to end are committed. The log's tail may not be:
// records of a failed write (this coordinator reloads after one, and they
// stay in its log), or of a former leader that the new one holds beyond
// its high watermark. Such records may yet be truncated, so every answer
// waits for loaded, as answers wait for the coordinator's own writes: else
// a reloaded coordinator would hand out, say, an assignment of a
// generation that is never committed, while the next coordinator makes
// that generation again with other members. If they are not committed in
// time, the coordinator reloads as after a failed write.
func (gc *groupCoordinator) awaitLoaded(loaded *groupWrite, end int64) {
	gc.part.awaitCommitted(end, groupWriteTimeout, func(err error) {
		if err == nil {
			loaded.finish(nil)
			return
		}
		loaded.finish(fmt.Errorf("%w: the group state loaded from %s is not committed: %v", kerr.NotCoordinator, gc.part.name(), err))
		go gc.fail(fmt.Errorf("the log tail it loaded is not committed: %w", err))
	})
}

// replay applies every record of the partition to c in offset order and
// returns the log end it read to.
func (gc *groupCoordinator) replay(c *group.Coordinator) (int64, error) {
	log := gc.part.log
	end := log.LogEndOffset()
	off := log.LogStartOffset()
	now := nowMs()
	for off < end {
		data, err := log.Read(off, 1<<20, end, true)
		if err != nil {
			return 0, fmt.Errorf("read %s at %d: %w", gc.part.name(), off, err)
		}
		if len(data) == 0 {
			// Compaction removed everything from off to the log end
			// (the active segment, never compacted, is empty).
			break
		}
		err = batch.Split(data, func(b []byte) error {
			h, recs, err := records.Decode(b, maxLoadBatchBytes)
			if err != nil {
				return fmt.Errorf("batch at %d: %w", off, err)
			}
			off = h.LastOffset() + 1
			if h.IsControl() {
				return nil // transaction markers carry no group state
			}
			for _, r := range recs {
				if err := c.Apply(now, group.Record{Key: r.Key, Value: r.Value}); err != nil {
					// One unreadable record must not keep every group of
					// the partition unavailable; say so and go on.
					gc.rt.b.log.Error("skipping unreadable group record", "partition", gc.part.name(),
						"offset", r.Offset(h), "err", err)
				}
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("load %s: %w", gc.part.name(), err)
		}
	}
	return end, nil
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

// servingErrLocked is the error for a request the coordinator cannot serve.
func (gc *groupCoordinator) servingErrLocked() error {
	switch gc.state {
	case coordinatorLoading:
		return kerr.CoordinatorLoadInProgress
	case coordinatorStopped:
		return kerr.NotCoordinator
	}
	return nil
}

// call runs fn on the coordinator and carries out its Output: the records
// are appended and, once committed, the answers it holds are sent and
// finish (the call's own answer, may be nil) is told nil; if the write
// fails, they all get NOT_COORDINATOR and the partition is reloaded. An
// error return means fn did not run: the coordinator is loading or gone.
func (gc *groupCoordinator) call(fn func(c *group.Coordinator, now int64) group.Output, finish func(error)) error {
	gc.mu.Lock()
	if err := gc.servingErrLocked(); err != nil {
		gc.mu.Unlock()
		return err
	}
	out := fn(gc.c, nowMs())
	send := gc.carryOutLocked(out, finish)
	gc.rearmLocked()
	gc.mu.Unlock()
	send()
	return nil
}

// write is call for requests whose purpose is to write (offset commits,
// deletions): when the partition cannot take an acks=all write now (its
// ISR is below min.insync.replicas), they are refused up front with
// COORDINATOR_NOT_AVAILABLE, as Kafka answers, instead of changing the
// coordinator's memory, failing the write and reloading the partition for
// every retry.
func (gc *groupCoordinator) write(fn func(c *group.Coordinator, now int64) group.Output, finish func(error)) error {
	if err := gc.part.acksAllWritable(); err != nil {
		return fmt.Errorf("%w: %s cannot take writes now: %v", kerr.CoordinatorNotAvailable, gc.part.name(), err)
	}
	return gc.call(fn, finish)
}

// read runs fn on the coordinator for a request that changes nothing.
func (gc *groupCoordinator) read(fn func(c *group.Coordinator)) error {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if err := gc.servingErrLocked(); err != nil {
		return err
	}
	fn(gc.c)
	return nil
}

// carryOutLocked takes the answers out of an Output and appends its
// records. The answers (and finish) go out once the records, and any
// written before them, are committed; the returned function sends them
// when that is already the case. The Output's assignment writes are
// appended after its records; their outcomes go back to the coordinator.
func (gc *groupCoordinator) carryOutLocked(out group.Output, finish func(error)) (send func()) {
	answers := gc.answersLocked(out)
	if finish != nil {
		answers = append(answers, finish)
	}
	deliver := func(err error) {
		for _, a := range answers {
			a(err)
		}
	}
	switch w := gc.lastWrite; {
	case len(out.Records) > 0:
		w := &groupWrite{}
		w.then(deliver)
		gc.lastWrite = w
		gc.appendLocked(out.Records, func(err error) {
			if err == nil {
				w.finish(nil)
				return
			}
			w.finish(fmt.Errorf("%w: writing group state to %s failed: %v", kerr.NotCoordinator, gc.part.name(), err))
			go gc.fail(err)
		})
		send = func() {}
	case w != nil:
		send = func() { w.then(deliver) }
	default:
		send = func() { deliver(nil) }
	}
	for _, aw := range out.AssignmentWrites {
		// Not a lastWrite: nothing shows the assignment before the
		// coordinator hears it committed, so no answer needs to wait for
		// it, and its failure (which the coordinator handles) must not fail
		// later answers.
		gc.appendLocked([]group.Record{aw.Record}, func(err error) {
			go gc.assignmentWritten(aw, err)
		})
	}
	return send
}

// appendLocked appends records as one batch with acks=all; done gets the
// outcome. produce appends under the partition lock before it returns, so
// the log order is the order of calls under gc.mu. done may run right here
// (under gc.mu) or on another goroutine: it must not take gc.mu.
func (gc *groupCoordinator) appendLocked(recs []group.Record, done func(error)) {
	kvs := make([]batch.KeyValue, len(recs))
	for i, r := range recs {
		kvs[i] = batch.KeyValue{Key: r.Key, Value: r.Value}
	}
	req := api.ProduceParams{
		Topic: gc.part.id, Partition: gc.part.index,
		Batches: [][]byte{batch.BuildKeyed(kvs, nowMs())},
		Acks:    -1, Timeout: groupWriteTimeout,
	}
	gc.part.produce(req, func(res api.ProduceResult) { done(res.Err) })
}

// assignmentWritten tells the coordinator the outcome of an assignment's
// record and carries out what follows: the generation's syncs are answered
// and, after a failure, the group rebalances. A coordinator stopped
// meanwhile has answered them already.
func (gc *groupCoordinator) assignmentWritten(w group.AssignmentWrite, err error) {
	if err != nil && !errors.Is(err, kerr.NotLeaderForPartition) {
		gc.rt.b.log.Warn("group assignment write failed; the group rebalances", "partition", gc.part.name(),
			"group", w.GroupID, "err", err)
	}
	_ = gc.call(func(c *group.Coordinator, now int64) group.Output { return c.AssignmentWritten(now, w, err) }, nil)
}

// answersLocked turns the Output's answers into callbacks taking the
// write's outcome: nil sends the coordinator's answer, an error replaces
// it.
func (gc *groupCoordinator) answersLocked(out group.Output) []func(error) {
	answers, unknown := gc.parked.Answers(out)
	for _, id := range unknown {
		gc.rt.b.log.Error("group coordinator answered an unknown request", "request", id)
	}
	return answers
}

// rearmLocked sets the tick timer to the coordinator's next deadline.
func (gc *groupCoordinator) rearmLocked() {
	if gc.state != coordinatorActive {
		return
	}
	deadline, ok := gc.c.NextDeadline()
	if !ok {
		gc.tick.Stop()
		return
	}
	// Timers never fire early, so at the firing now >= deadline and the
	// coordinator's timer is due: no spinning on a deadline in the past.
	gc.tick.Reset(max(time.Until(time.UnixMilli(deadline)), 0))
}

func (gc *groupCoordinator) onTick() {
	_ = gc.call(func(c *group.Coordinator, now int64) group.Output { return c.Tick(now) }, nil)
}

func (gc *groupCoordinator) onExpire() {
	err := gc.call(func(c *group.Coordinator, now int64) group.Output { return c.ExpireOffsets(now) }, nil)
	if err == nil {
		gc.mu.Lock()
		if gc.state == coordinatorActive {
			gc.expire.Reset(gc.expireInterval())
		}
		gc.mu.Unlock()
	}
}

// stop unloads the coordinator for good: parked requests are answered
// with NOT_COORDINATOR so their clients look for the new coordinator.
func (gc *groupCoordinator) stop(why string) {
	gc.mu.Lock()
	if gc.state == coordinatorStopped {
		gc.mu.Unlock()
		return
	}
	wasActive := gc.state == coordinatorActive
	gc.state = coordinatorStopped
	var answers []func(error)
	if wasActive {
		gc.tick.Stop()
		gc.expire.Stop()
		// Unload writes nothing and answers only with errors: no need to
		// wait for writes in flight.
		answers = gc.answersLocked(gc.c.Unload())
	}
	leftover := gc.leftoverLocked()
	gc.mu.Unlock()
	for _, a := range answers {
		a(nil)
	}
	leftover()
	if wasActive {
		gc.rt.b.log.Info("stopped coordinating consumer groups", "partition", gc.part.name(), "epoch", gc.epoch, "why", why)
	}
}

// leftoverLocked answers requests still parked after Unload (there should
// be none: Unload answers every parked request).
func (gc *groupCoordinator) leftoverLocked() func() {
	abandoned := gc.parked.Abandon(kerr.NotCoordinator)
	return func() {
		for _, answer := range abandoned {
			answer()
		}
	}
}

// fail handles a failed write: the coordinator's memory ran ahead of the
// log, so it is unloaded and the partition loaded again from the log.
func (gc *groupCoordinator) fail(cause error) {
	if gc.isStopped() {
		return
	}
	if !errors.Is(cause, kerr.NotLeaderForPartition) {
		gc.rt.b.log.Warn("group state write failed; reloading", "partition", gc.part.name(), "err", cause)
	}
	gc.stop("write failed")
	gc.rt.replaceFailed(gc)
}
