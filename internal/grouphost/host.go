// Package grouphost runs a group.Coordinator over its __consumer_offsets
// partition: loading it by replaying the log, holding every answer until
// the records it depends on are committed (the awaitCommitted rule),
// writing the coordinator's records and acting on their outcomes, and
// unloading it. It is the one host both internal/node and internal/sim
// drive, and Backend is the one api.GroupBackend adapter over it.
//
// A Host holds no lock, reads no clock and starts no goroutine: every
// method takes the time, and what the runtime must do comes back as a
// Ready (records to append, a high watermark to wait for, answers to send,
// when to tick, whether to reload). The runtime calls a Host under one
// serialisation (node: a mutex; sim: its single thread).
package grouphost

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/writeorder"

	"github.com/skein-log/skein/internal/group"
)

type state int8

const (
	loading state = iota
	active
	stopped
)

// Host is the coordinator of one __consumer_offsets partition in one
// leader epoch. A new epoch, or a failed write, gets a new Host that loads
// the partition again.
type Host struct {
	name  string // the partition, for messages
	state state
	c     *group.Coordinator // set once loaded
	// parked holds the JoinGroup and SyncGroup answer callbacks until
	// the coordinator's Output answers them.
	parked group.Parked
	nextID uint64
	// pending are the writes whose outcome is not applied yet, in the
	// order they were handed out. Outcomes are applied in that order
	// whatever order they are reported in: the partition commits them in
	// log order, and answers that depend on a later write also depend
	// on the earlier ones.
	pending writeorder.Queue[*write]
	// last is the latest write answers must wait for (a batch of the
	// coordinator's records, or the loaded log tail).
	last *write
	// completions are transaction ends (TxnCompleted) reported while
	// loading: the marker may lie beyond the end the replay read, so they
	// are applied once loaded (a second end of a transaction that the
	// replay already ended finds nothing pending: loading serves no
	// commits that could have started another).
	completions []completion
}

type completion struct {
	producerID int64
	commit     bool
}

type writeKind int8

const (
	recordsWrite    writeKind = iota // the coordinator's records; failure reloads
	loadedWrite                      // the replayed log tail must commit; failure reloads
	assignmentWrite                  // an assignment; its outcome goes back to the coordinator
)

type write struct {
	id         uint64
	kind       writeKind
	assignment group.AssignmentWrite
	finished   bool
	err        error
	waiters    []func(error)
}

// Write is one effect a Host asks for. With Records, append them to the
// partition as one batch with acks=all; without, wait until the
// partition's high watermark reaches AwaitCommitted. Either way report the
// outcome with Host.Written(ID, err). Writes must be appended in the
// order they are handed out, before the next call's (records reach the
// log in the order the coordinator made them).
type Write struct {
	ID             uint64
	Records        []group.Record
	AwaitCommitted int64
	// Txn, when set, makes Records a transactional batch of its producer
	// (group.Output.Txn): build it with batch.BuildKeyedTransactional and
	// append it as a coordinator's write (api.ProduceParams.Coordinator).
	Txn *group.TxnBatch
}

// BuildBatch is the batch a Write's records are appended as: a
// transactional batch of txn's producer when txn is set, else a plain one.
func BuildBatch(recs []group.Record, txn *group.TxnBatch, timestampMs int64) []byte {
	kvs := make([]batch.KeyValue, len(recs))
	for i, r := range recs {
		kvs[i] = batch.KeyValue{Key: r.Key, Value: r.Value}
	}
	if txn != nil {
		return batch.BuildKeyedTransactional(kvs, timestampMs, txn.ProducerID, txn.ProducerEpoch)
	}
	return batch.BuildKeyed(kvs, timestampMs)
}

// ReloadBackoff is how long a runtime waits between stopping a Host that
// asked for a reload and loading the partition again, so that a failure
// that repeats on every load (a full disk) does not reload in a hot loop;
// clients meanwhile get NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS
// and retry, as they do during any coordinator move.
const ReloadBackoff = 200 * time.Millisecond

// Ready is what the runtime must do after a call into a Host.
type Ready struct {
	// Writes to start, in order.
	Writes []Write
	// Send are answers to send, in order, once the runtime has released
	// its serialisation (they call into connections).
	Send []func()
	// TickAt is when to call Tick next (HasTick false: no timer needed).
	TickAt  int64
	HasTick bool
	// Reload is set when the coordinator's memory may have run ahead of
	// its log (a write failed, or the loaded tail did not commit): stop
	// this Host after this call and load the partition again
	// ReloadBackoff later.
	Reload error
	// Warnings are worth a log line; Problems are broken invariants (the
	// simulator fails the run on them).
	Warnings []string
	Problems []string
}

func (r *Ready) merge(o Ready) {
	r.Writes = append(r.Writes, o.Writes...)
	r.Send = append(r.Send, o.Send...)
	if o.Reload != nil && r.Reload == nil {
		r.Reload = o.Reload
	}
	r.Warnings = append(r.Warnings, o.Warnings...)
	r.Problems = append(r.Problems, o.Problems...)
}

// New returns a Host for the partition named name, loading: requests get
// COORDINATOR_LOAD_IN_PROGRESS until Activate.
func New(name string) *Host {
	return &Host{name: name}
}

// Coordinator is the loaded coordinator (nil before Activate), for
// checkers that inspect its state.
func (h *Host) Coordinator() *group.Coordinator { return h.c }

// Active reports whether the Host serves requests.
func (h *Host) Active() bool { return h.state == active }

// Stopped reports whether the Host was stopped.
func (h *Host) Stopped() bool { return h.state == stopped }

// servingErr is the error for a request the Host cannot serve.
func (h *Host) servingErr() error {
	switch h.state {
	case loading:
		return kerr.CoordinatorLoadInProgress
	case stopped:
		return kerr.NotCoordinator
	}
	return nil
}

// Activate starts serving with the coordinator Replay loaded. Every answer
// waits until the log up to the end Replay read to is committed: the tail
// may not be (records of a failed write, which stay in the log of a
// coordinator that reloads after one, or of a former leader beyond this
// leader's high watermark), and such records may yet be truncated. Else a
// reloaded coordinator would hand out, say, an assignment of a generation
// that is never committed while the next coordinator makes that generation
// again with other members (internal/sim seed 172).
func (h *Host) Activate(now int64, l Loaded) Ready {
	var rd Ready
	if h.state != loading {
		return rd
	}
	h.state = active
	h.c = l.Coordinator
	for _, tc := range h.completions {
		h.c.TxnCompleted(tc.producerID, tc.commit)
	}
	h.completions = nil
	rd.Problems = append(rd.Problems, l.Problems...)
	w := h.newWrite(loadedWrite)
	h.last = w
	rd.Writes = append(rd.Writes, Write{ID: w.id, AwaitCommitted: l.End})
	h.deadline(&rd)
	return rd
}

func (h *Host) newWrite(kind writeKind) *write {
	h.nextID++
	w := &write{id: h.nextID, kind: kind}
	h.pending.Add(w.id, w)
	return w
}

// Call runs fn on the coordinator and carries out its Output: its records
// become a Write and the answers it holds (and finish, the call's own
// answer, may be nil) go out once that write and every earlier one is
// committed; if the write fails they all get NOT_COORDINATOR and Ready
// asks for a reload. An error means fn did not run: the Host is loading or
// stopped.
func (h *Host) Call(now int64, fn func(c *group.Coordinator, now int64) group.Output, finish func(error)) (Ready, error) {
	if err := h.servingErr(); err != nil {
		return Ready{}, err
	}
	rd := h.carryOut(fn(h.c, now), finish)
	h.deadline(&rd)
	return rd, nil
}

// Read runs fn on the coordinator for a request that changes nothing and
// needs no committed state (ListGroups, DescribeGroups).
func (h *Host) Read(fn func(c *group.Coordinator)) error {
	if err := h.servingErr(); err != nil {
		return err
	}
	fn(h.c)
	return nil
}

func (h *Host) carryOut(out group.Output, finish func(error)) Ready {
	var rd Ready
	answers, unknown := h.parked.Answers(out)
	for _, id := range unknown {
		rd.Problems = append(rd.Problems, fmt.Sprintf("%s: the group coordinator answered request %d, which it was never given", h.name, id))
	}
	if finish != nil {
		answers = append(answers, finish)
	}
	deliver := func(err error) {
		for _, a := range answers {
			a(err)
		}
	}
	switch last := h.last; {
	case len(out.Records) > 0:
		w := h.newWrite(recordsWrite)
		w.waiters = append(w.waiters, deliver)
		h.last = w
		rd.Writes = append(rd.Writes, Write{ID: w.id, Records: out.Records, Txn: out.Txn})
	case last != nil && !last.finished:
		last.waiters = append(last.waiters, deliver)
	case last != nil:
		err := last.err
		rd.Send = append(rd.Send, func() { deliver(err) })
	default:
		rd.Send = append(rd.Send, func() { deliver(nil) })
	}
	// Not a last write: nothing shows the assignment before the
	// coordinator hears it committed, so no answer waits for it, and its
	// failure (which the coordinator handles) must not fail later answers.
	for _, aw := range out.AssignmentWrites {
		w := h.newWrite(assignmentWrite)
		w.assignment = aw
		rd.Writes = append(rd.Writes, Write{ID: w.id, Records: []group.Record{aw.Record}})
	}
	return rd
}

// Written applies the outcome of the Write id (nil: committed). It may
// be reported after Stop: the answers waiting for it still go out.
func (h *Host) Written(now int64, id uint64, err error) Ready {
	var rd Ready
	h.pending.Report(id, err, func(w *write, werr error) { rd.merge(h.finish(now, w, werr)) })
	h.deadline(&rd)
	return rd
}

func (h *Host) finish(now int64, w *write, err error) Ready {
	var rd Ready
	switch w.kind {
	case assignmentWrite:
		if err != nil && !errors.Is(err, kerr.NotLeaderForPartition) {
			rd.Warnings = append(rd.Warnings, fmt.Sprintf("%s: the assignment of group %s was not written (%v); the group rebalances", h.name, w.assignment.GroupID, err))
		}
		// A stopped Host's Unload has answered the generation's syncs.
		if h.state == active {
			rd.merge(h.carryOut(h.c.AssignmentWritten(now, w.assignment, err), nil))
		}
		return rd
	case loadedWrite:
		if err != nil {
			rd.Reload = fmt.Errorf("the log tail it loaded is not committed: %w", err)
			err = fmt.Errorf("%w: the group state loaded from %s is not committed: %v", kerr.NotCoordinator, h.name, err)
		}
	case recordsWrite:
		if err != nil {
			rd.Reload = err
			err = fmt.Errorf("%w: writing group state to %s failed: %v", kerr.NotCoordinator, h.name, err)
		}
	}
	if rd.Reload != nil && h.state != active {
		rd.Reload = nil // already unloaded; nothing to reload from here
	}
	if rd.Reload != nil && !errors.Is(rd.Reload, kerr.NotLeaderForPartition) {
		rd.Warnings = append(rd.Warnings, fmt.Sprintf("%s: group state write failed (%v); reloading", h.name, rd.Reload))
	}
	w.finished, w.err = true, err
	waiters := w.waiters
	w.waiters = nil
	for _, f := range waiters {
		rd.Send = append(rd.Send, func() { f(err) })
	}
	return rd
}

// TxnCompleted ends producerID's transactional offset commits once its
// marker is committed on the partition (api.TxnCompletionListener): held
// while loading, ignored once stopped (the next Host replays the marker).
// Nothing is written and no answer waits: the marker is the record.
func (h *Host) TxnCompleted(now int64, producerID int64, commit bool) Ready {
	var rd Ready
	switch h.state {
	case loading:
		if len(h.completions) < maxHeldCompletions {
			h.completions = append(h.completions, completion{producerID: producerID, commit: commit})
		} else {
			// Dropped: if its marker is past the replay's end, the
			// producer's offsets stay pending until the next load.
			rd.Warnings = append(rd.Warnings, fmt.Sprintf("%s: too many transaction ends while loading; producer %d's is dropped", h.name, producerID))
		}
	case active:
		h.c.TxnCompleted(producerID, commit)
		h.deadline(&rd)
	}
	return rd
}

// maxHeldCompletions bounds the transaction ends held while loading.
const maxHeldCompletions = 100_000

// Tick runs the coordinator's timers (call it at Ready.TickAt).
func (h *Host) Tick(now int64) (Ready, error) {
	return h.Call(now, func(c *group.Coordinator, now int64) group.Output { return c.Tick(now) }, nil)
}

// ExpireOffsets removes expired offsets (every
// offsets.retention.check.interval.ms).
func (h *Host) ExpireOffsets(now int64) (Ready, error) {
	return h.Call(now, func(c *group.Coordinator, now int64) group.Output { return c.ExpireOffsets(now) }, nil)
}

// Stop unloads the Host for good: parked requests are answered with
// NOT_COORDINATOR so their clients look for the new coordinator. Unload
// writes nothing and answers only with errors, so these answers wait for
// no write; answers already waiting for a write still get its outcome.
func (h *Host) Stop() Ready {
	var rd Ready
	if h.state == stopped {
		return rd
	}
	wasActive := h.state == active
	h.state = stopped
	if wasActive {
		answers, unknown := h.parked.Answers(h.c.Unload())
		for _, id := range unknown {
			rd.Problems = append(rd.Problems, fmt.Sprintf("%s: the group coordinator answered request %d, which it was never given", h.name, id))
		}
		for _, a := range answers {
			rd.Send = append(rd.Send, func() { a(nil) })
		}
	}
	// Unload answers every parked request; any left over are answered
	// here, in request order so that runs stay deterministic.
	rd.Send = append(rd.Send, h.parked.Abandon(kerr.NotCoordinator)...)
	return rd
}

func (h *Host) deadline(rd *Ready) {
	if h.state != active {
		return
	}
	rd.TickAt, rd.HasTick = h.c.NextDeadline()
}
