package sim

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/records"
)

// The group coordinator's runtime: internal/node's group_partition.go,
// single threaded. Each __consumer_offsets partition this node leads has a
// coordinator for that leader epoch, loaded by replaying the partition's
// log when leadership arrives; its records are appended with acks=all and
// the answers that depend on them go out only once they are committed; a
// failed append answers NOT_COORDINATOR and the partition is loaded again.
// An assignment's record is the exception: its outcome goes back to the
// coordinator, which answers the generation's syncs or rebalances.
// Timers run on the event queue at the coordinator's NextDeadline, and
// ExpireOffsets on a schedule. The harness creates __consumer_offsets with
// the data topic (cluster.go), so EnsureOffsetsTopic only reports whether
// this node's image has it yet.

const (
	offsetsTopic = api.OffsetsTopic
	// groupWriteTimeout bounds the wait for a coordinator's records
	// (production: offsets.commit.timeout.ms, 5s; shortened with the rest
	// of the simulated timings).
	groupWriteTimeout    = 2 * time.Second
	groupExpireInterval  = 2 * time.Second
	groupLoadRetryPeriod = time.Second
)

// simGroupConfig is production's defaults with the session and rebalance
// timings scaled down like the rest of the simulated runtime.
func simGroupConfig() group.Config {
	cfg := group.DefaultConfig()
	cfg.InitialRebalanceDelayMs = 300
	cfg.MinSessionTimeoutMs = 500
	cfg.MaxSessionTimeoutMs = 30_000
	return cfg
}

// coordinator is one group.Coordinator of one offsets partition in one
// leader epoch (internal/node's groupCoordinator).
type coordinator struct {
	r       *replica
	epoch   int32
	c       *group.Coordinator
	stopped bool
	parked  group.Parked
	// lastWrite is the latest batch of records appended; answers of later
	// calls that wrote nothing wait for it too.
	lastWrite *groupWrite
	// timerGen invalidates tick timers armed before the latest rearm.
	timerGen uint64
}

// groupWrite is one batch of records on its way to commit (single
// threaded: no lock, unlike internal/node's).
type groupWrite struct {
	finished bool
	err      error
	waiters  []func(error)
}

func (w *groupWrite) then(f func(error)) {
	if w.finished {
		f(w.err)
		return
	}
	w.waiters = append(w.waiters, f)
}

func (w *groupWrite) finish(err error) {
	if w.finished {
		return
	}
	w.finished, w.err = true, err
	waiters := w.waiters
	w.waiters = nil
	for _, f := range waiters {
		f(err)
	}
}

// startCoordinator replaces the replica's coordinator with one for its
// current leader epoch, loaded from the log.
func (r *replica) startCoordinator() {
	r.stopCoordinator("new leader epoch")
	gc := &coordinator{r: r, epoch: r.core.LeaderEpoch()}
	c, err := group.New(simGroupConfig(), r.p.n.c.s.rng.Uint64())
	var end int64
	if err == nil {
		end, err = gc.replay(c)
	}
	if err != nil {
		r.p.n.tracef("%s: loading consumer groups failed: %v; retrying", r.name(), err)
		epoch := r.core.LeaderEpoch()
		r.p.n.after(groupLoadRetryPeriod, func() {
			if r.coord == nil && r.core.IsLeader() && r.core.LeaderEpoch() == epoch && r.p.parts[partKey{r.id, r.index}] == r {
				r.startCoordinator()
			}
		})
		return
	}
	gc.c = c
	r.coord = gc
	r.p.n.tracef("%s: coordinating %d groups in epoch %d", r.name(), len(c.ListGroups(nil)), gc.epoch)
	r.p.n.c.check.coordinatorLoaded(gc)
	gc.awaitLoaded(end)
	gc.rearm()
	gc.scheduleExpire()
}

// stopCoordinator unloads the replica's coordinator: parked requests are
// answered NOT_COORDINATOR so their clients look for the new one.
func (r *replica) stopCoordinator(why string) {
	gc := r.coord
	if gc == nil {
		return
	}
	r.coord = nil
	gc.stopped = true
	gc.timerGen++
	send := gc.answers(gc.c.Unload())
	// Unload answers every parked request; any left over are answered
	// here, in request order so that runs stay deterministic.
	for _, answer := range gc.parked.Abandon(kerr.NotCoordinator) {
		send = append(send, func(error) { answer() })
	}
	for _, a := range send {
		a(nil)
	}
	r.p.n.tracef("%s: stopped coordinating groups of epoch %d (%s)", r.name(), gc.epoch, why)
}

// replay applies every record of the partition, as groupCoordinator.replay,
// and returns the log end it read to.
func (gc *coordinator) replay(c *group.Coordinator) (int64, error) {
	log := gc.r.log
	now := gc.r.nowMs()
	end := log.LogEndOffset()
	for off := log.LogStartOffset(); off < end; {
		data, err := log.Read(off, 1<<20, end, true)
		if err != nil {
			return 0, fmt.Errorf("read at %d: %w", off, err)
		}
		if len(data) == 0 {
			return 0, fmt.Errorf("read at %d: no batch below the log end %d", off, end)
		}
		err = batch.Split(data, func(b []byte) error {
			h, recs, err := records.Decode(b, 1<<20)
			if err != nil {
				return fmt.Errorf("batch at %d: %w", off, err)
			}
			off = h.LastOffset() + 1
			for _, rec := range recs {
				if err := c.Apply(now, group.Record{Key: rec.Key, Value: rec.Value}); err != nil {
					gc.r.p.n.c.violation("%s: unreadable group record at %d: %v", gc.r.name(), rec.Offset(h), err)
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return end, nil
}

// awaitLoaded holds every answer until the records replayed up to end are
// committed, as groupCoordinator.awaitLoaded.
func (gc *coordinator) awaitLoaded(end int64) {
	w := &groupWrite{}
	gc.lastWrite = w
	r := gc.r
	r.awaitCommitted(end, groupWriteTimeout, func(err error) {
		if err == nil {
			w.finish(nil)
			return
		}
		w.finish(fmt.Errorf("%w: the group state loaded from %s is not committed: %v", kerr.NotCoordinator, r.name(), err))
		r.p.n.after(0, func() { gc.fail(fmt.Errorf("the log tail it loaded is not committed: %w", err)) })
	})
}

// call runs fn on the coordinator and carries out its Output (see
// groupCoordinator.call and carryOutLocked); finish, if not nil, gets the
// write's outcome.
func (gc *coordinator) call(fn func(c *group.Coordinator, now int64) group.Output, finish func(error)) {
	out := fn(gc.c, gc.r.nowMs())
	answers := gc.answers(out)
	if finish != nil {
		answers = append(answers, finish)
	}
	deliver := func(err error) {
		for _, a := range answers {
			a(err)
		}
	}
	defer gc.rearm()
	r := gc.r
	switch w := gc.lastWrite; {
	case len(out.Records) > 0:
		w := &groupWrite{}
		w.then(deliver)
		gc.lastWrite = w
		gc.append(out.Records, func(err error) {
			if err == nil {
				w.finish(nil)
				return
			}
			w.finish(fmt.Errorf("%w: writing group state to %s failed: %v", kerr.NotCoordinator, r.name(), err))
			// The coordinator's memory ran ahead of the log: reload it,
			// after this event (the append may have failed inside call).
			r.p.n.after(0, func() { gc.fail(err) })
		})
	case w != nil:
		w.then(deliver)
	default:
		deliver(nil)
	}
	for _, aw := range out.AssignmentWrites {
		// Not a lastWrite, as in internal/node: the coordinator acts on it
		// only once it hears the outcome, after this event.
		gc.append([]group.Record{aw.Record}, func(err error) {
			if err != nil {
				r.p.n.tracef("%s: assignment of group %s not written (%v); the group rebalances", r.name(), aw.GroupID, err)
			}
			r.p.n.after(0, func() {
				if !gc.stopped {
					gc.call(func(c *group.Coordinator, now int64) group.Output { return c.AssignmentWritten(now, aw, err) }, nil)
				}
			})
		})
	}
}

// append appends records as one acks=all batch; the checker follows the
// committed ones.
func (gc *coordinator) append(recs []group.Record, done func(error)) {
	r := gc.r
	kvs := make([]batch.KeyValue, len(recs))
	for i, rec := range recs {
		kvs[i] = batch.KeyValue{Key: rec.Key, Value: rec.Value}
	}
	r.produce(api.ProduceParams{Topic: r.id, Partition: r.index, Batches: [][]byte{batch.BuildKeyed(kvs, r.nowMs())},
		Acks: -1, Timeout: groupWriteTimeout},
		func(res api.ProduceResult) {
			if res.Err == nil {
				r.p.n.c.check.groupRecordsCommitted(recs)
			}
			done(res.Err)
		})
}

// write is call for requests whose purpose is to write: refused up front
// with COORDINATOR_NOT_AVAILABLE when the partition cannot take an
// acks=all write now.
func (gc *coordinator) write(fn func(c *group.Coordinator, now int64) group.Output, finish func(error)) error {
	if !gc.r.core.IsLeader() {
		return kerr.NotCoordinator
	}
	if err := gc.r.core.AcksAllWritable(); err != nil {
		return fmt.Errorf("%w: %s cannot take writes now: %v", kerr.CoordinatorNotAvailable, gc.r.name(), err)
	}
	gc.call(fn, finish)
	return nil
}

func (gc *coordinator) fail(cause error) {
	r := gc.r
	if gc.stopped || r.coord != gc {
		return
	}
	r.p.n.tracef("%s: group state write failed (%v); reloading", r.name(), cause)
	r.stopCoordinator("write failed")
	if r.core.IsLeader() && r.p.parts[partKey{r.id, r.index}] == r {
		r.startCoordinator()
	}
}

// answers turns an Output's answers into callbacks taking the write's
// outcome: nil sends the coordinator's answer, an error replaces it.
func (gc *coordinator) answers(out group.Output) []func(error) {
	answers, unknown := gc.parked.Answers(out)
	for _, id := range unknown {
		gc.r.p.n.c.violation("%s: coordinator answered unknown request %d", gc.r.name(), id)
	}
	return answers
}

// rearm schedules a Tick at the coordinator's next deadline.
func (gc *coordinator) rearm() {
	if gc.stopped {
		return
	}
	gc.timerGen++
	deadline, ok := gc.c.NextDeadline()
	if !ok {
		return
	}
	gen := gc.timerGen
	gc.r.p.n.after(msDuration(deadline-gc.r.nowMs()), func() {
		if gc.stopped || gc.timerGen != gen {
			return
		}
		gc.call(func(c *group.Coordinator, now int64) group.Output { return c.Tick(now) }, nil)
	})
}

func (gc *coordinator) scheduleExpire() {
	gc.r.p.n.after(groupExpireInterval, func() {
		if gc.stopped {
			return
		}
		gc.call(func(c *group.Coordinator, now int64) group.Output { return c.ExpireOffsets(now) }, nil)
		gc.scheduleExpire()
	})
}
