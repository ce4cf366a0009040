package txn

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Config is what the coordinator needs of the broker's properties.
type Config struct {
	// MaxTimeoutMs is transaction.max.timeout.ms: InitProducerId with a
	// larger transaction.timeout.ms fails with INVALID_TRANSACTION_TIMEOUT.
	MaxTimeoutMs int32
	// ExpirationMs is transactional.id.expiration.ms.
	ExpirationMs int64
	// MaxTransactionalIDs bounds the ids one partition's coordinator
	// holds: InitProducerId for a new one beyond it fails with
	// COORDINATOR_NOT_AVAILABLE (Kafka has no bound; memory does).
	MaxTransactionalIDs int
	// MaxPartitions bounds the partitions of one transaction.
	MaxPartitions int
	// RetryBackoffMs and RetryBackoffMaxMs bound the wait before a
	// completion whose write was refused is written again: the first,
	// doubled after each failure in a row up to the second.
	RetryBackoffMs, RetryBackoffMaxMs int64
	// HoldMs is how long an add that meets a state change of its id in
	// flight (an earlier add's write, or the previous transaction's
	// markers and completion) waits at the coordinator for it to take
	// effect before it is answered CONCURRENT_TRANSACTIONS (Holds). 0
	// never waits: the answer is at once, as Kafka's.
	HoldMs int64
}

// DefaultHoldMs is Config.HoldMs's default: the time a partition
// leader's adds are retried for before its produce fails
// (add.partitions.to.txn.retry.backoff.max.ms's default, 100 ms).
const DefaultHoldMs = 100

// DefaultConfig is Kafka's defaults.
func DefaultConfig() Config {
	return Config{MaxTimeoutMs: 900_000, ExpirationMs: 604_800_000, MaxTransactionalIDs: 1_000_000, MaxPartitions: 100_000,
		RetryBackoffMs: 50, RetryBackoffMaxMs: 2_000, HoldMs: DefaultHoldMs}
}

// Coordinator holds the transactional ids of one __transaction_state
// partition.
type Coordinator struct {
	cfg  Config
	txns map[string]*entry
	// retrying are the ids whose completion write failed (completeFailed),
	// so that RetryCompletions need not scan every id.
	retrying map[string]struct{}
}

type entry struct {
	cur Txn
	// pending is the transition whose write is in flight (nil: none).
	pending *Write
	// fenceFailed is Kafka's hasFailedEpochFence: a fencing abort's write
	// failed, so the next one does not bump the epoch again.
	fenceFailed bool
	// completeFailed: the markers are written but the completion's write
	// failed; RetryCompletions writes it again from retryAt on, after
	// completeFailures failures in a row.
	completeFailed   bool
	completeFailures int
	retryAt          int64
	// endedFrom is the epoch a transaction version 2 end bumped from,
	// valid while endedValid (from that end's prepared state until the
	// next other transition): an EndTxn at it is a retry of that end.
	// Memory only, as Kafka's lastProducerEpoch.
	endedFrom  int16
	endedValid bool
}

// New returns an empty coordinator.
func New(cfg Config) *Coordinator {
	if cfg.MaxTransactionalIDs <= 0 {
		cfg.MaxTransactionalIDs = DefaultConfig().MaxTransactionalIDs
	}
	if cfg.MaxPartitions <= 0 {
		cfg.MaxPartitions = DefaultConfig().MaxPartitions
	}
	if cfg.RetryBackoffMs <= 0 {
		cfg.RetryBackoffMs = DefaultConfig().RetryBackoffMs
	}
	cfg.RetryBackoffMaxMs = max(cfg.RetryBackoffMaxMs, cfg.RetryBackoffMs)
	cfg.HoldMs = max(cfg.HoldMs, 0)
	return &Coordinator{cfg: cfg, txns: map[string]*entry{}, retrying: map[string]struct{}{}}
}

// Write is one state record to append. The runtime hands it back to
// Written with the append's outcome.
type Write struct {
	Record Record
	id     string
	to     *Txn // nil: the id is removed (a tombstone)
	// fence: the coordinator's own abort, which fenced the producer.
	fence bool
	// endV2 is a transaction version 2 client's end, bumping from
	// endFrom.
	endV2   bool
	endFrom int16
}

// TransactionalID is the id whose state the write changes.
func (w *Write) TransactionalID() string { return w.id }

// Markers asks the runtime to write the transaction's COMMIT or ABORT
// marker to each of its partitions (WriteTxnMarkers to their leaders).
type Markers struct {
	TransactionalID string
	ProducerID      int64
	Epoch           int16
	Commit          bool
	Partitions      []TopicPartition
	// TransactionVersion is the client's (Txn.ClientTV), which
	// WriteTxnMarkers v2 carries (KIP-1228): a leader then refuses a
	// version 2 marker that does not raise the epoch of the transaction
	// it ends.
	TransactionVersion int16
}

// Output is what the runtime must do after a call.
type Output struct {
	Writes  []*Write
	Markers []Markers
	// RetryAt, when not 0, is the time (ms) from which RetryCompletions
	// has a refused completion to write again: the runtime calls it then.
	RetryAt int64
	// Warnings are worth a log line.
	Warnings []string
}

func (o *Output) merge(p Output) {
	o.Writes = append(o.Writes, p.Writes...)
	o.Markers = append(o.Markers, p.Markers...)
	o.RetryAt = EarlierRetry(o.RetryAt, p.RetryAt)
	o.Warnings = append(o.Warnings, p.Warnings...)
}

// EarlierRetry is the earlier of two RetryAt times, 0 meaning none.
func EarlierRetry(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// transit starts e's transition to next: its write goes out, and it takes
// effect once committed.
func (c *Coordinator) transit(e *entry, next Txn, fence bool) *Write {
	w := &Write{Record: record(&next), id: next.ID, to: &next, fence: fence}
	e.pending = w
	return w
}

// Apply replays one record of the partition (loading).
func (c *Coordinator) Apply(r Record) error {
	id, t, err := decode(r)
	if err != nil {
		return err
	}
	if t == nil {
		delete(c.txns, id)
		return nil
	}
	if e, ok := c.txns[id]; ok {
		// Kafka replays without checking transitions; a lost record must
		// not make the id unloadable. Keep LastEpoch: not in the log.
		t.LastEpoch = e.cur.LastEpoch
		e.cur = *t
		return nil
	}
	c.txns[id] = &entry{cur: *t}
	return nil
}

// Loaded is the work a freshly loaded coordinator resumes: markers for
// every transaction left prepared (their write may have been the last
// thing the previous coordinator did).
func (c *Coordinator) Loaded() Output {
	var out Output
	for _, id := range c.sortedIDs() {
		e := c.txns[id]
		if e.cur.State == PrepareCommit || e.cur.State == PrepareAbort {
			out.merge(c.afterPrepare(e))
		}
	}
	return out
}

func (c *Coordinator) sortedIDs() []string {
	ids := make([]string, 0, len(c.txns))
	for id := range c.txns {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Written applies the outcome of w (nil: committed). A committed
// PrepareCommit or PrepareAbort asks for its markers.
func (c *Coordinator) Written(now int64, w *Write, err error) Output {
	e, ok := c.txns[w.id]
	if !ok || e.pending != w {
		return Output{Warnings: []string{fmt.Sprintf("transactional id %q: the outcome of a write it does not wait for", w.id)}}
	}
	e.pending = nil
	if err != nil {
		if w.fence {
			e.fenceFailed = true
		}
		var out Output
		if w.to != nil && (w.to.State == CompleteCommit || w.to.State == CompleteAbort) {
			e.completeFailed = true
			e.completeFailures++
			backoff := c.cfg.RetryBackoffMaxMs
			if n := e.completeFailures - 1; n < 32 {
				backoff = min(backoff, c.cfg.RetryBackoffMs<<n)
			}
			e.retryAt = now + backoff
			c.retrying[w.id] = struct{}{}
			out.RetryAt = e.retryAt
		}
		if e.cur.Epoch == noEpoch && e.cur.State == Empty && w.to != nil && e.cur.ProducerID == w.to.ProducerID {
			// The id was created for this write and never committed.
			delete(c.txns, w.id)
		}
		return out
	}
	if w.to == nil {
		delete(c.txns, w.id)
		return Output{}
	}
	e.cur = *w.to
	e.fenceFailed, e.completeFailed, e.completeFailures = false, false, 0
	delete(c.retrying, w.id)
	switch {
	case w.endV2:
		e.endedFrom, e.endedValid = w.endFrom, true
	case e.cur.State != CompleteCommit && e.cur.State != CompleteAbort:
		e.endedValid = false
	}
	if e.cur.State == PrepareCommit || e.cur.State == PrepareAbort {
		return c.afterPrepare(e)
	}
	return Output{}
}

// afterPrepare is the next step of a prepared transaction: its markers,
// or, with no partitions, the completion at once.
func (c *Coordinator) afterPrepare(e *entry) Output {
	t := e.cur
	if len(t.Partitions) == 0 {
		return Output{Writes: []*Write{c.transit(e, completed(t, t.UpdateMs), false)}}
	}
	return Output{Markers: []Markers{{
		TransactionalID: t.ID, ProducerID: t.ProducerID, Epoch: t.Epoch,
		Commit: t.State == PrepareCommit, Partitions: slices.Clone(t.Partitions),
		TransactionVersion: t.ClientTV,
	}}}
}

func completed(t Txn, now int64) Txn {
	next := t.clone()
	next.State = CompleteAbort
	if t.State == PrepareCommit {
		next.State = CompleteCommit
	}
	next.Partitions = nil
	next.UpdateMs = max(now, t.UpdateMs)
	if t.NextProducerID >= 0 {
		// Transaction version 2 with the epoch exhausted: the completion
		// moves to the next producer id, at epoch 0.
		next.PrevProducerID, next.ProducerID, next.NextProducerID = t.ProducerID, t.NextProducerID, -1
		next.Epoch, next.LastEpoch = 0, noEpoch
	}
	return next
}

// MarkersWritten completes a prepared transaction once its markers are on
// every partition: the CompleteCommit or CompleteAbort state is written.
func (c *Coordinator) MarkersWritten(now int64, m Markers) Output {
	e, ok := c.txns[m.TransactionalID]
	if !ok || e.pending != nil || e.cur.ProducerID != m.ProducerID || e.cur.Epoch != m.Epoch ||
		(e.cur.State != PrepareCommit && e.cur.State != PrepareAbort) || (e.cur.State == PrepareCommit) != m.Commit {
		return Output{Warnings: []string{fmt.Sprintf("transactional id %q: markers written for a transaction no longer prepared", m.TransactionalID)}}
	}
	return Output{Writes: []*Write{c.transit(e, completed(e.cur, now), false)}}
}

// InitRequest is InitProducerId with a transactional id.
type InitRequest struct {
	TransactionalID string
	TimeoutMs       int32
	// ProducerID and Epoch (v3+, KIP-360): the producer's current ones
	// when it recovers from an abortable error; -1 and -1 for a new
	// producer.
	ProducerID int64
	Epoch      int16
	// NewProducerID is a fresh producer id the runtime allocated, or -1:
	// a call that needs one fails with ErrNeedProducerID.
	NewProducerID int64
}

// InitResult answers InitRequest once its write (if any) is committed.
type InitResult struct {
	Err        error
	ProducerID int64
	Epoch      int16
}

// ErrNeedProducerID asks the runtime to allocate a producer id and call
// again with it in NewProducerID.
var ErrNeedProducerID = fmt.Errorf("a new producer id is needed")

func fail(err error) InitResult { return InitResult{Err: err, ProducerID: -1, Epoch: -1} }

// InitProducerID is Kafka's handleInitProducerId for a transactional id.
func (c *Coordinator) InitProducerID(now int64, req InitRequest) (InitResult, Output) {
	switch {
	case req.TransactionalID == "":
		return fail(fmt.Errorf("%w: empty transactional id", kerr.InvalidRequest)), Output{}
	case req.TimeoutMs <= 0 || req.TimeoutMs > c.cfg.MaxTimeoutMs:
		return fail(fmt.Errorf("%w: transaction.timeout.ms %d is not in (0, transaction.max.timeout.ms=%d]",
			kerr.InvalidTransactionTimeout, req.TimeoutMs, c.cfg.MaxTimeoutMs)), Output{}
	}
	expected := req.ProducerID >= 0 || req.Epoch >= 0
	e, ok := c.txns[req.TransactionalID]
	if !ok {
		if req.NewProducerID < 0 {
			return fail(ErrNeedProducerID), Output{}
		}
		if len(c.txns) >= c.cfg.MaxTransactionalIDs {
			return fail(fmt.Errorf("%w: this coordinator holds %d transactional ids", kerr.CoordinatorNotAvailable, len(c.txns))), Output{}
		}
		e = &entry{cur: Txn{
			ID: req.TransactionalID, ProducerID: req.NewProducerID, PrevProducerID: -1, NextProducerID: -1,
			Epoch: noEpoch, LastEpoch: noEpoch, TimeoutMs: req.TimeoutMs, State: Empty, StartMs: -1, UpdateMs: now,
		}}
		c.txns[req.TransactionalID] = e
	}
	t := e.cur
	if e.pending != nil {
		return fail(fmt.Errorf("%w: a state change of %q is being written", kerr.ConcurrentTransactions, t.ID)), Output{}
	}
	if expected && !(t.Epoch == noEpoch || req.ProducerID == t.ProducerID ||
		(req.ProducerID == t.PrevProducerID && epochExhausted(req.Epoch))) {
		return fail(fmt.Errorf("%w: producer id %d is not the current one of %q", kerr.ProducerFenced, req.ProducerID, t.ID)), Output{}
	}
	switch t.State {
	case PrepareCommit, PrepareAbort:
		return fail(fmt.Errorf("%w: %q is completing a transaction", kerr.ConcurrentTransactions, t.ID)), Output{}
	case Ongoing:
		// Fence the current producer and abort its transaction; the
		// client retries (CONCURRENT_TRANSACTIONS) and then gets an epoch
		// bumped a second time, or a new producer id if that exhausted it.
		w, err := c.fenceAndAbort(e, now)
		if err != nil {
			return fail(err), Output{}
		}
		return fail(fmt.Errorf("%w: aborting the open transaction of %q first", kerr.ConcurrentTransactions, t.ID)), Output{Writes: []*Write{w}}
	case Empty, CompleteCommit, CompleteAbort:
	default:
		return fail(fmt.Errorf("%w: %q is in state %s", kerr.UnknownServerError, t.ID, t.State)), Output{}
	}
	next := t.clone()
	next.TimeoutMs, next.State, next.Partitions, next.StartMs, next.UpdateMs = req.TimeoutMs, Empty, nil, -1, now
	if epochExhausted(t.Epoch) && (!expected || req.Epoch == t.Epoch) {
		if req.NewProducerID < 0 {
			return fail(ErrNeedProducerID), Output{}
		}
		next.PrevProducerID, next.ProducerID, next.Epoch = t.ProducerID, req.NewProducerID, 0
		next.LastEpoch = noEpoch
		if expected {
			next.LastEpoch = t.Epoch
		}
	} else {
		switch {
		case epochExhausted(t.Epoch):
			return fail(fmt.Errorf("%w: epoch %d of producer %d does not match the exhausted epoch %d", kerr.ProducerFenced, req.Epoch, req.ProducerID, t.Epoch)), Output{}
		case !expected:
			next.Epoch, next.LastEpoch = t.Epoch+1, noEpoch
		case t.Epoch == noEpoch || req.Epoch == t.Epoch:
			next.Epoch, next.LastEpoch = t.Epoch+1, t.Epoch
		case req.Epoch == t.LastEpoch:
			// A retry of a bump that succeeded: the current epoch again.
			next.Epoch, next.LastEpoch = t.Epoch, t.LastEpoch
		default:
			return fail(fmt.Errorf("%w: epoch %d is neither the current %d nor the previous %d of %q", kerr.ProducerFenced, req.Epoch, t.Epoch, t.LastEpoch, t.ID)), Output{}
		}
	}
	w := c.transit(e, next, false)
	return InitResult{ProducerID: next.ProducerID, Epoch: next.Epoch}, Output{Writes: []*Write{w}}
}

// fenceAndAbort is Kafka's prepareFenceProducerEpoch followed by the
// coordinator's own EndTxn(abort): the epoch is bumped (not twice after a
// fencing write failed) and the PrepareAbort state written with it.
func (c *Coordinator) fenceAndAbort(e *entry, now int64) (*Write, error) {
	t := e.cur
	if t.Epoch == math.MaxInt16 {
		return nil, fmt.Errorf("%w: cannot fence producer %d of %q at epoch %d", kerr.UnknownServerError, t.ProducerID, t.ID, t.Epoch)
	}
	next := t.clone()
	if !e.fenceFailed {
		next.Epoch++
	}
	next.LastEpoch, next.State, next.UpdateMs = noEpoch, PrepareAbort, max(now, t.UpdateMs)
	return c.transit(e, next, true), nil
}

// owned checks that the producer is the transactional id's current one.
func (c *Coordinator) owned(id string, producerID int64, epoch int16) (*entry, error) {
	e, ok := c.txns[id]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: no transactional id %q here", kerr.InvalidProducerIDMapping, id)
	case e.cur.ProducerID != producerID:
		return nil, fmt.Errorf("%w: producer id %d is not that of %q", kerr.InvalidProducerIDMapping, producerID, id)
	case e.cur.Epoch != epoch:
		return nil, fmt.Errorf("%w: epoch %d is not the current %d of %q", kerr.ProducerFenced, epoch, e.cur.Epoch, id)
	}
	return e, nil
}

// AddPartitions is Kafka's handleAddPartitionsToTransaction (and
// AddOffsetsToTxn, with the group's __consumer_offsets partition). The
// error applies to every partition.
func (c *Coordinator) AddPartitions(now int64, id string, producerID int64, epoch int16, parts []TopicPartition) (Output, error) {
	e, err := c.owned(id, producerID, epoch)
	if err != nil {
		return Output{}, err
	}
	t := e.cur
	switch {
	case e.pending != nil:
		return Output{}, fmt.Errorf("%w: a state change of %q is being written", kerr.ConcurrentTransactions, id)
	case t.State == PrepareCommit || t.State == PrepareAbort:
		return Output{}, fmt.Errorf("%w: %q is completing a transaction", kerr.ConcurrentTransactions, id)
	case t.State == Ongoing && containsAll(t.Partitions, parts):
		return Output{}, nil
	case t.State != Ongoing && !t.State.completed():
		return Output{}, fmt.Errorf("%w: %q is in state %s", kerr.InvalidTxnState, id, t.State)
	}
	next := t.clone()
	if t.State != Ongoing {
		next.StartMs = now
	}
	next.Partitions = normalize(append(next.Partitions, parts...))
	if len(next.Partitions) > c.cfg.MaxPartitions {
		return Output{}, fmt.Errorf("%w: a transaction may hold at most %d partitions", kerr.InvalidRequest, c.cfg.MaxPartitions)
	}
	next.State, next.UpdateMs = Ongoing, max(now, t.UpdateMs)
	next.ClientTV = 0 // a version 1 client's add; AddPartitionsV2 marks its own
	return Output{Writes: []*Write{c.transit(e, next, false)}}, nil
}

// Holds reports until when (ms) a request of id that failed with err is
// held instead of answered, or 0: answer it now. Only a
// CONCURRENT_TRANSACTIONS of an id with a state change in flight is held
// (its write pending, or its markers and completion not yet written),
// and at most HoldMs from now: the change's write, when it is committed,
// is what lets the request through, so the runtime runs it again then
// (with Holds's answer at its first run as the bound) instead of the
// asker retrying after its own backoff. That backoff, a partition
// leader's add.partitions.to.txn.retry.backoff.ms (20 ms) or a client's,
// is most of a small transaction's time otherwise: a transactional
// producer's first produce to a partition adds it right after its
// previous transaction's EndTxn was answered, while that transaction's
// markers are being written, and the adds of its first produces to
// several leaders meet each other's writes. What a held request gets in
// the end is what it would have got from a retry then; nothing takes
// effect before the change in flight is committed.
func (c *Coordinator) Holds(now int64, id string, err error) int64 {
	e, ok := c.txns[id]
	if c.cfg.HoldMs == 0 || !ok || !errors.Is(err, kerr.ConcurrentTransactions) {
		return 0
	}
	if e.pending == nil && e.cur.State != PrepareCommit && e.cur.State != PrepareAbort {
		return 0
	}
	return now + c.cfg.HoldMs
}

// HoldMs is Config.HoldMs.
func (c *Coordinator) HoldMs() int64 { return c.cfg.HoldMs }

func containsAll(have, want []TopicPartition) bool {
	for _, tp := range want {
		if _, ok := slices.BinarySearchFunc(have, tp, compareTP); !ok {
			return false
		}
	}
	return true
}

// VerifyPartitions is AddPartitionsToTxn v4+'s verify-only request from a
// partition leader (KIP-890 part 1): whether each partition is in the
// producer's ongoing transaction. The error, if any, applies to all.
func (c *Coordinator) VerifyPartitions(id string, producerID int64, epoch int16, parts []TopicPartition) ([]error, error) {
	e, err := c.owned(id, producerID, epoch)
	if err != nil {
		return nil, err
	}
	if e.cur.State == PrepareCommit || e.cur.State == PrepareAbort {
		return nil, fmt.Errorf("%w: %q is completing a transaction", kerr.ConcurrentTransactions, id)
	}
	errs := make([]error, len(parts))
	for i, tp := range parts {
		if e.cur.State != Ongoing || !containsAll(e.cur.Partitions, []TopicPartition{tp}) {
			errs[i] = fmt.Errorf("%w: %s-%d is not in the transaction of %q", kerr.InvalidTxnState, tp.Topic, tp.Partition, id)
		}
	}
	return errs, nil
}

// EndTxn is Kafka's handleEndTransaction from a client (transaction
// version 1: the epoch stays).
func (c *Coordinator) EndTxn(now int64, id string, producerID int64, epoch int16, commit bool) (Output, error) {
	e, ok := c.txns[id]
	switch {
	case !ok:
		return Output{}, fmt.Errorf("%w: no transactional id %q here", kerr.InvalidProducerIDMapping, id)
	case e.cur.ProducerID != producerID:
		return Output{}, fmt.Errorf("%w: producer id %d is not that of %q", kerr.InvalidProducerIDMapping, producerID, id)
	case epoch != e.cur.Epoch:
		return Output{}, fmt.Errorf("%w: epoch %d is not the current %d of %q", kerr.ProducerFenced, epoch, e.cur.Epoch, id)
	case e.pending != nil:
		return Output{}, fmt.Errorf("%w: a state change of %q is being written", kerr.ConcurrentTransactions, id)
	}
	t := e.cur
	invalid := func() error {
		verb := "abort"
		if commit {
			verb = "commit"
		}
		return fmt.Errorf("%w: cannot %s %q in state %s", kerr.InvalidTxnState, verb, id, t.State)
	}
	switch t.State {
	case Ongoing:
		next := t.clone()
		next.State, next.UpdateMs = PrepareAbort, max(now, t.UpdateMs)
		if commit {
			next.State = PrepareCommit
		}
		// The end's client speaks version 1 (its markers keep the
		// epoch), whoever added the partitions, as Kafka takes the
		// transaction version of the request.
		next.ClientTV = 0
		return Output{Writes: []*Write{c.transit(e, next, false)}}, nil
	case CompleteCommit, CompleteAbort:
		if commit == (t.State == CompleteCommit) {
			return Output{}, nil // a retry of an EndTxn that completed
		}
		return Output{}, invalid()
	case PrepareCommit, PrepareAbort:
		if commit == (t.State == PrepareCommit) {
			return Output{}, fmt.Errorf("%w: %q is completing that transaction", kerr.ConcurrentTransactions, id)
		}
		return Output{}, invalid()
	}
	return Output{}, invalid()
}

// AbortTimedOut aborts every transaction open longer than its timeout,
// fencing its producer (Kafka's abortTimedOutTransactions).
func (c *Coordinator) AbortTimedOut(now int64) Output {
	var out Output
	for _, id := range c.sortedIDs() {
		e := c.txns[id]
		t := e.cur
		if e.pending != nil || t.State != Ongoing || t.StartMs+int64(t.TimeoutMs) >= now {
			continue
		}
		w, err := c.fenceAndAbort(e, now)
		if err != nil {
			out.Warnings = append(out.Warnings, err.Error())
			continue
		}
		out.Writes = append(out.Writes, w)
	}
	return out
}

// RetryCompletions writes again the CompleteCommit or CompleteAbort of
// every prepared transaction whose markers are on all its partitions but
// whose completion write failed. A failure that ends this coordinator
// (the runtime reloads the partition) needs none: the next one resends
// the markers of what it loads prepared. A refused append (too few
// in-sync replicas) keeps the coordinator, and nothing else would write
// the completion: the transaction would stay prepared, and its producer
// refused with CONCURRENT_TRANSACTIONS, until the next leader change.
// Kafka's marker channel manager retries that append too (its queue of
// log appends to retry, on COORDINATOR_NOT_AVAILABLE), promptly: here
// each completion is written again once its backoff (Written's RetryAt)
// has passed; the Output's RetryAt is the next one not yet due.
func (c *Coordinator) RetryCompletions(now int64) Output {
	var out Output
	ids := make([]string, 0, len(c.retrying))
	for id := range c.retrying {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		e, ok := c.txns[id]
		switch {
		case !ok || !e.completeFailed || (e.cur.State != PrepareCommit && e.cur.State != PrepareAbort):
			delete(c.retrying, id)
		case e.pending != nil:
			// Its outcome (Written) decides what follows.
		case e.retryAt > now:
			out.RetryAt = EarlierRetry(out.RetryAt, e.retryAt)
		default:
			out.Writes = append(out.Writes, c.transit(e, completed(e.cur, now), false))
		}
	}
	return out
}

// ExpireTransactionalIDs removes the ids with no transaction in progress
// that have not changed for transactional.id.expiration.ms: a tombstone
// is written, and the id is forgotten once it is committed.
func (c *Coordinator) ExpireTransactionalIDs(now int64) Output {
	var out Output
	for _, id := range c.sortedIDs() {
		e := c.txns[id]
		if e.pending != nil || !e.cur.State.completed() || e.cur.UpdateMs+c.cfg.ExpirationMs > now {
			continue
		}
		w := &Write{Record: tombstone(id), id: id}
		e.pending = w
		out.Writes = append(out.Writes, w)
	}
	return out
}

// Describe is the state of a transactional id (false: unknown here).
func (c *Coordinator) Describe(id string) (Txn, bool) {
	e, ok := c.txns[id]
	if !ok {
		return Txn{}, false
	}
	return e.cur.clone(), true
}

// ListFilter is ListTransactions' filters; empty ones match everything.
type ListFilter struct {
	States      []State
	ProducerIDs []int64
	// MinDurationMs (v1, KIP-994): only transactions open longer; -1 none.
	MinDurationMs int64
	// Prefix (the CLI's filter) of the transactional ids; "" any.
	Prefix string
}

// List lists the transactional ids matching f, sorted.
func (c *Coordinator) List(now int64, f ListFilter) []Txn {
	var out []Txn
	for _, id := range c.sortedIDs() {
		t := c.txns[id].cur
		switch {
		case len(f.States) > 0 && !slices.Contains(f.States, t.State),
			len(f.ProducerIDs) > 0 && !slices.Contains(f.ProducerIDs, t.ProducerID),
			f.MinDurationMs >= 0 && (t.StartMs < 0 || now-t.StartMs <= f.MinDurationMs),
			!strings.HasPrefix(id, f.Prefix):
			continue
		}
		out = append(out, t.clone())
	}
	return out
}

// Len is the number of transactional ids held.
func (c *Coordinator) Len() int { return len(c.txns) }
