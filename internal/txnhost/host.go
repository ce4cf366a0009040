// Package txnhost runs a txn.Coordinator over its __transaction_state
// partition: loading it by replay, holding every answer until the state
// record it depends on is committed, handing out the record writes and
// the WriteTxnMarkers deliveries as effects and applying their outcomes,
// and unloading it. It is the one host internal/node drives (and the
// simulator can), and Backend is the one api.TxnBackend adapter over it.
//
// A Host holds no lock, reads no clock and starts no goroutine: every
// method takes the time, and what the runtime must do comes back as a
// Ready. The runtime calls a Host under one serialisation.
package txnhost

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/writeorder"

	"github.com/skein-log/skein/internal/txn"
)

type state int8

const (
	loading state = iota // replaying, or waiting for the replayed tail to commit
	active               // serving
	stopped              // unloaded for good
)

// Host is the transaction coordinator of one __transaction_state
// partition in one leader epoch. A new epoch, or a failed write, gets a
// new Host that loads the partition again.
type Host struct {
	name string
	// epoch is the partition's leader epoch: the coordinator epoch of the
	// markers it sends, by which partition leaders refuse a stale
	// coordinator's (TRANSACTION_COORDINATOR_FENCED).
	epoch int32
	state state
	c     *txn.Coordinator
	// pending are the writes whose outcome is not applied yet, in the
	// order handed out; outcomes are applied in that order whatever order
	// they are reported in, as the partition commits them in log order.
	pending writeorder.Queue[*write]
	nextID  uint64
	// held are the requests of each transactional id waiting for its
	// state change in flight (txn.Coordinator.Holds), in arrival order.
	held map[string][]*heldCall
}

// heldCall is a request CallHolding holds: op runs again once a write of
// its id is committed, or is answered as it stands at until.
type heldCall struct {
	id     string
	until  int64
	op     func(c *txn.Coordinator, now int64) (txn.Output, error)
	finish func(error)
}

type write struct {
	id      uint64
	loaded  bool // the replayed tail; its commit activates the Host
	writes  []*txn.Write
	waiters []func(error)
}

// Write is one effect a Host asks for. With Records, append them to the
// partition as one batch with acks=all; without, wait until the
// partition's high watermark reaches AwaitCommitted. Either way report the
// outcome with Host.Written(ID, err), and start writes in the order they
// are handed out.
type Write struct {
	ID             uint64
	Records        []txn.Record
	AwaitCommitted int64
}

// Markers is a delivery of one transaction's markers: send
// WriteTxnMarkers to the leaders of its partitions with CoordinatorEpoch,
// retry each partition as MarkerOutcomeFor says, and report completion
// with Host.MarkersWritten.
type Markers struct {
	txn.Markers
	CoordinatorEpoch int32
}

// ReloadBackoff is how long a runtime waits between stopping a Host whose
// write failed and loading the partition again. A failure that repeats on
// every load (a full disk: the load resumes a completion whose write fails
// at once) would otherwise reload in a hot loop; clients meanwhile get
// NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS and retry, as they do
// during any coordinator move.
const ReloadBackoff = 200 * time.Millisecond

// Ready is what the runtime must do after a call into a Host.
type Ready struct {
	Writes  []Write
	Markers []Markers
	// Send are answers to send once the runtime has released its
	// serialisation.
	Send []func()
	// Reload is set when a write failed: the coordinator's memory may no
	// longer match its log (a timed-out write may still be committed), so
	// stop this Host and load the partition again, ReloadBackoff later.
	Reload error
	// RetryAt, when not 0, is the time (ms) at which to call
	// RetryCompletions: a completion whose write was refused waits for it
	// (the backoff is the coordinator's). A runtime keeps the earliest
	// one it was given.
	RetryAt  int64
	Warnings []string
}

func (r *Ready) merge(o Ready) {
	r.Writes = append(r.Writes, o.Writes...)
	r.Markers = append(r.Markers, o.Markers...)
	r.Send = append(r.Send, o.Send...)
	if r.Reload == nil {
		r.Reload = o.Reload
	}
	r.RetryAt = txn.EarlierRetry(r.RetryAt, o.RetryAt)
	r.Warnings = append(r.Warnings, o.Warnings...)
}

// New returns a loading Host for the partition named name in leader
// epoch epoch: requests get COORDINATOR_LOAD_IN_PROGRESS until the log it
// replays is committed.
func New(name string, epoch int32) *Host {
	return &Host{name: name, epoch: epoch, held: map[string][]*heldCall{}}
}

// Epoch is the coordinator epoch (the partition's leader epoch).
func (h *Host) Epoch() int32 { return h.epoch }

// Active reports whether the Host serves requests.
func (h *Host) Active() bool { return h.state == active }

// Stopped reports whether the Host was stopped.
func (h *Host) Stopped() bool { return h.state == stopped }

// Coordinator is the loaded coordinator (nil before Activate), for
// checkers.
func (h *Host) Coordinator() *txn.Coordinator { return h.c }

func (h *Host) servingErr() error {
	switch h.state {
	case loading:
		return fmt.Errorf("%w: %s is loading", kerr.CoordinatorLoadInProgress, h.name)
	case stopped:
		return fmt.Errorf("%w: %s is no longer coordinated here", kerr.NotCoordinator, h.name)
	}
	return nil
}

// Activate takes the coordinator Replay loaded. It serves once the log it
// read is committed: the tail may be a former leader's records beyond
// this leader's high watermark, which may yet be truncated, and a state
// served from them (a commit decided) could be lost.
func (h *Host) Activate(l Loaded) Ready {
	if h.state != loading || h.c != nil {
		return Ready{}
	}
	h.c = l.Coordinator
	w := h.newWrite()
	w.loaded = true
	return Ready{Writes: []Write{{ID: w.id, AwaitCommitted: l.End}}, Warnings: l.Problems}
}

func (h *Host) newWrite() *write {
	h.nextID++
	w := &write{id: h.nextID}
	h.pending.Add(w.id, w)
	return w
}

// Call runs fn on the coordinator and carries out its Output: its writes
// become one Write, and finish (may be nil) gets that write's outcome
// once it and every earlier one is applied, or nil at once if fn wrote
// nothing (the coordinator's memory holds only committed state). An error
// means fn did not run.
func (h *Host) Call(now int64, fn func(c *txn.Coordinator, now int64) txn.Output, finish func(error)) (Ready, error) {
	if err := h.servingErr(); err != nil {
		return Ready{}, err
	}
	return h.carryOut(fn(h.c, now), finish), nil
}

// CallHolding runs op, a request of transactional id id, as Call does,
// and finish gets the write's failure, else op's own error. If op fails
// with an error the coordinator holds (txn.Coordinator.Holds: a state
// change of id is in flight), the request waits instead: op runs again
// after each committed write of id, until it is no longer held, and at
// the deadline (the Ready's RetryAt; RetryCompletions) it is answered
// what it gets then. A request of an id with requests held waits behind
// them, so they run in arrival order. An error means op did not run.
func (h *Host) CallHolding(now int64, id string, op func(c *txn.Coordinator, now int64) (txn.Output, error), finish func(error)) (Ready, error) {
	if err := h.servingErr(); err != nil {
		return Ready{}, err
	}
	hc := &heldCall{id: id, op: op, finish: finish}
	if q := h.held[id]; len(q) > 0 {
		hc.until = now + h.c.HoldMs()
		h.held[id] = append(q, hc)
		return Ready{}, nil
	}
	return h.run(now, hc, true), nil
}

// CallNow runs op as CallHolding does, but never holds it.
func (h *Host) CallNow(now int64, op func(c *txn.Coordinator, now int64) (txn.Output, error), finish func(error)) (Ready, error) {
	if err := h.servingErr(); err != nil {
		return Ready{}, err
	}
	return h.run(now, &heldCall{op: op, finish: finish}, false), nil
}

// run runs a held (or new: first) call: held again if the coordinator
// holds it and its deadline has not passed, else carried out and
// answered.
func (h *Host) run(now int64, hc *heldCall, first bool) Ready {
	out, opErr := hc.op(h.c, now)
	if len(out.Writes) == 0 {
		if first {
			hc.until = h.c.Holds(now, hc.id, opErr)
		}
		if now < hc.until && h.c.Holds(now, hc.id, opErr) != 0 {
			h.held[hc.id] = append(h.held[hc.id], hc)
			rd := h.carryOut(out, nil)
			rd.RetryAt = txn.EarlierRetry(rd.RetryAt, hc.until)
			return rd
		}
	}
	finish := hc.finish
	return h.carryOut(out, func(werr error) { finish(cmpErr(werr, opErr)) })
}

// release runs again the calls held for id, in order, until one is held
// again (those behind it stay behind it).
func (h *Host) release(now int64, id string) Ready {
	q := h.held[id]
	delete(h.held, id)
	var rd Ready
	for i, hc := range q {
		if len(h.held[id]) > 0 {
			h.held[id] = append(h.held[id], q[i:]...)
			break
		}
		rd.merge(h.run(now, hc, false))
	}
	return rd
}

// expireHeld answers the held calls whose deadline has passed (as they
// stand now) and asks for a RetryAt at the next deadline.
func (h *Host) expireHeld(now int64) Ready {
	var rd Ready
	for _, id := range slices.Sorted(maps.Keys(h.held)) {
		q := h.held[id]
		n := 0
		for n < len(q) && q[n].until <= now {
			n++
		}
		if n < len(q) {
			rd.RetryAt = txn.EarlierRetry(rd.RetryAt, q[n].until)
		}
		if n == 0 {
			continue
		}
		if n == len(q) {
			delete(h.held, id)
		} else {
			h.held[id] = q[n:]
		}
		for _, hc := range q[:n] {
			rd.merge(h.run(now, hc, false))
		}
	}
	return rd
}

// Held is the number of requests held, for checkers and tests.
func (h *Host) Held() int {
	n := 0
	for _, q := range h.held {
		n += len(q)
	}
	return n
}

// Read runs fn on the coordinator for a request that changes nothing.
func (h *Host) Read(fn func(c *txn.Coordinator)) error {
	if err := h.servingErr(); err != nil {
		return err
	}
	fn(h.c)
	return nil
}

func (h *Host) carryOut(out txn.Output, finish func(error)) Ready {
	rd := Ready{Warnings: out.Warnings, RetryAt: out.RetryAt}
	for _, m := range out.Markers {
		rd.Markers = append(rd.Markers, Markers{Markers: m, CoordinatorEpoch: h.epoch})
	}
	if len(out.Writes) == 0 {
		if finish != nil {
			rd.Send = append(rd.Send, func() { finish(nil) })
		}
		return rd
	}
	w := h.newWrite()
	w.writes = out.Writes
	if finish != nil {
		w.waiters = append(w.waiters, finish)
	}
	recs := make([]txn.Record, len(out.Writes))
	for i, tw := range out.Writes {
		recs[i] = tw.Record
	}
	rd.Writes = append(rd.Writes, Write{ID: w.id, Records: recs})
	return rd
}

// Written applies the outcome of the Write id (nil: committed). It may be
// reported after Stop: the answers waiting for it still go out.
func (h *Host) Written(now int64, id uint64, err error) Ready {
	var rd Ready
	h.pending.Report(id, err, func(w *write, werr error) { rd.merge(h.finish(now, w, werr)) })
	return rd
}

func (h *Host) finish(now int64, w *write, err error) Ready {
	var rd Ready
	if w.loaded {
		switch {
		case h.state != loading:
		case err != nil:
			rd.Reload = fmt.Errorf("the transaction state loaded from %s is not committed: %w", h.name, err)
		default:
			h.state = active
			rd.merge(h.carryOut(h.c.Loaded(), nil))
		}
		return rd
	}
	for _, tw := range w.writes {
		out := h.c.Written(now, tw, err)
		if h.state != active {
			// A stopped Host writes and sends nothing more: what follows
			// from the prepared state is the next coordinator's to do.
			out = txn.Output{Warnings: out.Warnings}
		}
		rd.merge(h.carryOut(out, nil))
	}
	answer := err
	if err != nil {
		answer = clientError(h.name, err)
		// NOT_ENOUGH_REPLICAS refused the append: nothing reached the log.
		if h.state == active && !errors.Is(err, kerr.NotEnoughReplicas) {
			rd.Reload = err
		}
	}
	if h.state == active && rd.Reload == nil {
		// The ids' state changes are over (or refused, nothing written):
		// what they held may go on. After a reload the next coordinator
		// answers them (Stop).
		for _, tw := range w.writes {
			rd.merge(h.release(now, tw.TransactionalID()))
		}
	}
	for _, f := range w.waiters {
		rd.Send = append(rd.Send, func() { f(answer) })
	}
	return rd
}

// clientError is what a client is told of a failed state write, as Kafka
// maps append errors in its transaction coordinator: a write that may
// still succeed on a retry here is COORDINATOR_NOT_AVAILABLE, a lost
// leadership or disk NOT_COORDINATOR (look for the coordinator again).
func clientError(name string, err error) error {
	switch {
	case errors.Is(err, kerr.NotEnoughReplicas), errors.Is(err, kerr.NotEnoughReplicasAfterAppend),
		errors.Is(err, kerr.RequestTimedOut):
		return fmt.Errorf("%w: writing transaction state to %s: %v", kerr.CoordinatorNotAvailable, name, err)
	}
	return fmt.Errorf("%w: writing transaction state to %s: %v", kerr.NotCoordinator, name, err)
}

// MarkersWritten reports that m's markers are on every partition: the
// transaction's completion is written. A delivery from another epoch of
// this partition's coordinator is ignored.
func (h *Host) MarkersWritten(now int64, m Markers) Ready {
	if h.state != active || m.CoordinatorEpoch != h.epoch {
		return Ready{}
	}
	return h.carryOut(h.c.MarkersWritten(now, m.Markers), nil)
}

// AbortTimedOut aborts the transactions past their timeout (every
// transaction.abort.timed.out.transaction.cleanup.interval.ms).
func (h *Host) AbortTimedOut(now int64) (Ready, error) {
	return h.Call(now, func(c *txn.Coordinator, now int64) txn.Output { return c.AbortTimedOut(now) }, nil)
}

// RetryCompletions writes again the completions refused earlier whose
// backoff has passed (txn.Coordinator.RetryCompletions), at the RetryAt a
// Ready asked for.
// It also answers the held requests whose deadline has passed.
func (h *Host) RetryCompletions(now int64) (Ready, error) {
	rd, err := h.Call(now, func(c *txn.Coordinator, now int64) txn.Output { return c.RetryCompletions(now) }, nil)
	if err != nil {
		return rd, err
	}
	rd.merge(h.expireHeld(now))
	return rd, nil
}

// ExpireTransactionalIDs removes idle transactional ids (every
// transaction.remove.expired.transaction.cleanup.interval.ms).
func (h *Host) ExpireTransactionalIDs(now int64) (Ready, error) {
	return h.Call(now, func(c *txn.Coordinator, now int64) txn.Output { return c.ExpireTransactionalIDs(now) }, nil)
}

// Stop unloads the Host for good. Answers waiting for a write still get
// its outcome; held requests are answered NOT_COORDINATOR (the Ready's
// Send); markers in flight are abandoned (the next coordinator sends
// them again from the prepared state it loads).
func (h *Host) Stop() Ready {
	var rd Ready
	if h.state == stopped {
		return rd
	}
	h.state = stopped
	err := h.servingErr()
	for _, id := range slices.Sorted(maps.Keys(h.held)) {
		for _, hc := range h.held[id] {
			rd.Send = append(rd.Send, func() { hc.finish(err) })
		}
	}
	h.held = map[string][]*heldCall{}
	return rd
}
