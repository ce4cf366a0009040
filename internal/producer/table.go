// Package producer keeps the idempotent-producer state of one partition
// (KIP-98): per producer id, the current epoch and the last WindowSize
// batches, so that a retried batch is answered with its original offsets
// instead of being written twice.
//
// The package is pure: no I/O, no clock, no goroutines. Time enters as
// arguments; persistence of producer ids is the caller's job.
//
// Use on the leader's produce path, per idempotent batch:
//
//	d, err := t.Check(h)     // before appending; err maps to a Kafka code
//	Duplicate -> answer with d.Original's offsets, write nothing
//	Append    -> append, then t.Update(h) with the assigned base offset
//
// At startup, and when a follower becomes leader, build a fresh Table and
// call Apply with every batch header read back from the log, in order.
//
// Unknown producers (KIP-360, Kafka >= 2.5): a batch from a producer the
// table has no state for is accepted at any sequence, not rejected with
// UNKNOWN_PRODUCER_ID. This is what Kafka does once retention or
// DeleteRecords has removed the producer's batches: rejecting would force
// every such client to reset its producer id for no safety gain. The cost,
// shared with Kafka, is that a retry of a batch whose state has already
// expired cannot be recognised as a duplicate.
package producer

import (
	"fmt"
	"sort"

	"github.com/skein-log/skein/internal/batch"
)

// InitialEpoch is the epoch of a producer id freshly handed out by
// InitProducerId without a transactional id.
const InitialEpoch int16 = 0

// Action is what the broker should do with a batch.
type Action int

const (
	// Append: write the batch; it is new and in order (or not idempotent).
	Append Action = iota + 1
	// Duplicate: the batch is a retry of one already in the log; write
	// nothing and answer with Decision.Original's offsets.
	Duplicate
)

func (a Action) String() string {
	switch a {
	case Append:
		return "append"
	case Duplicate:
		return "duplicate"
	default:
		return fmt.Sprintf("action(%d)", int(a))
	}
}

// Decision is the outcome of Check.
type Decision struct {
	Action Action
	// Original is the batch this one duplicates; set only for Duplicate.
	Original BatchMetadata
}

// Table is the producer state of one partition. It is not safe for
// concurrent use; the partition's owner serialises access.
type Table struct {
	maxProducers int
	producers    map[int64]*Entry
	// ongoing holds the first offset of every open transaction, by
	// producer id: the few entries the last stable offset depends on.
	ongoing map[int64]int64
	// verifying holds, per producer id without an open transaction here,
	// the guard of the transaction verification under way (KIP-890 part
	// 1, Kafka's VerificationStateEntry); nextGuard numbers them. Leader
	// state only: never in the log, never rebuilt.
	verifying map[int64]verification
	nextGuard uint64
}

// verification is one producer's verification under way: its guard and
// when it started (it expires like an idle producer).
type verification struct {
	guard     uint64
	startedMs int64
	// epoch is the producer epoch verified; tv2 marks a transaction
	// version 2 producer's (KIP-890 part 2: its transactions end with a
	// marker of the next epoch, so a marker at or below epoch ends the
	// transaction before, never the one being verified).
	epoch int16
	tv2   bool
}

// NoGuard is the guard of a produce that needs no verification: its
// producer's transaction is already open on the partition, or
// verification is off.
const NoGuard uint64 = 0

// NewTable returns an empty table that admits at most maxProducers distinct
// producers through Check (each costs a few hundred bytes). Apply ignores
// the limit so that rebuilding from the log never loses state; Check then
// refuses new producers until expiry makes room. maxProducers <= 0 means 1.
func NewTable(maxProducers int) *Table {
	return &Table{maxProducers: max(maxProducers, 1), producers: make(map[int64]*Entry), ongoing: make(map[int64]int64),
		verifying: make(map[int64]verification)}
}

// Len is the number of producers with state.
func (t *Table) Len() int { return len(t.producers) }

// Check decides, before appending, what to do with batch h. Batches without
// a producer id pass through as Append. Errors wrap the package's sentinel
// errors. Check does not change the table.
func (t *Table) Check(h batch.Header) (Decision, error) { return t.check(h, false, NoGuard) }

// CheckVerified is Check for a leader that verifies transactions (KIP-890
// part 1, transaction.partition.verification.enable): a transactional
// batch of a producer with no transaction open here is refused with
// INVALID_TXN_STATE unless guard is the one StartVerification handed out
// for the producer and nothing (a marker, another transactional batch)
// has ended that verification since. As in Kafka's UnifiedLog, fencing
// comes first, then a retry of a batch already written is a duplicate,
// then the verification, then the sequence.
func (t *Table) CheckVerified(h batch.Header, guard uint64) (Decision, error) {
	return t.check(h, true, guard)
}

func (t *Table) check(h batch.Header, verify bool, guard uint64) (Decision, error) {
	appendIt := Decision{Action: Append}
	if !h.HasProducerID() {
		return appendIt, nil
	}
	e, err := t.fenced(h)
	if err != nil {
		return Decision{}, err
	}
	if e == nil {
		if !h.IsControl() && h.BaseSequence < 0 {
			return Decision{}, badSequence(h, "an idempotent batch needs a sequence")
		}
		// KIP-360: no state (never seen, or expired): accept any sequence.
		return appendIt, t.checkGuard(h, nil, verify, guard)
	}
	if h.IsControl() {
		// Transaction markers carry no sequence; only fencing applies
		// (CheckMarker adds the coordinator's epoch).
		return appendIt, nil
	}
	if h.BaseSequence < 0 {
		return Decision{}, badSequence(h, "an idempotent batch needs a sequence")
	}
	if h.ProducerEpoch > e.Epoch {
		if err := t.checkGuard(h, e, verify, guard); err != nil {
			return Decision{}, err
		}
		if h.BaseSequence != 0 {
			return Decision{}, badSequence(h, fmt.Sprintf("a new epoch (current %d) must start at sequence 0", e.Epoch))
		}
		return appendIt, e.checkTxnState(h)
	}
	if orig, dup := e.findDuplicate(h.BaseSequence, h.LastSequence()); dup {
		return Decision{Action: Duplicate, Original: orig}, nil
	}
	if err := t.checkGuard(h, e, verify, guard); err != nil {
		return Decision{}, err
	}
	if last := e.lastSeq(); !inSequence(last, h.BaseSequence) {
		return Decision{}, badSequence(h, fmt.Sprintf("expected sequence after %d", last))
	}
	return appendIt, e.checkTxnState(h)
}

// checkGuard refuses a transactional batch that would open a
// transaction here without the coordinator having confirmed it (e is the
// producer's entry, nil if it has none).
func (t *Table) checkGuard(h batch.Header, e *Entry, verify bool, guard uint64) error {
	if !verify || !h.IsTransactional() || h.IsControl() || e != nil && e.openAt(h.ProducerEpoch) {
		return nil
	}
	if v, ok := t.verifying[h.ProducerID]; !ok || guard == NoGuard || v.guard != guard {
		return fmt.Errorf("%w: producer %d: record was not part of an ongoing transaction (not verified with its coordinator)", ErrNotVerified, h.ProducerID)
	}
	return nil
}

// StartVerification begins (or joins) the verification of producerID's
// transaction at epoch before its first transactional batch here: it
// returns the guard to append with, or NoGuard and false when the
// producer's transaction at that epoch is already open here (nothing to
// verify; Kafka's hasOngoingTransaction with the epoch, so the first
// batch of a transaction version 2 producer's next transaction, at the
// next epoch, is verified even while its previous transaction's marker
// is still on its way). tv2 marks a transaction version 2 producer. A
// retry joins the verification under way and keeps its start time, as
// Kafka does, so an entry never outlives the expiry; one of another
// epoch replaces it. A producer the table cannot admit is refused with
// ErrTooManyProducers.
func (t *Table) StartVerification(producerID int64, epoch int16, tv2 bool, nowMs int64) (uint64, bool, error) {
	if e, ok := t.producers[producerID]; ok && e.openAt(epoch) {
		return NoGuard, false, nil
	}
	if v, ok := t.verifying[producerID]; ok && v.epoch == epoch && v.tv2 == tv2 {
		return v.guard, true, nil
	}
	if _, ok := t.verifying[producerID]; !ok && len(t.verifying) >= t.maxProducers {
		return NoGuard, false, fmt.Errorf("%w: %d transaction verifications under way", ErrTooManyProducers, len(t.verifying))
	}
	t.nextGuard++
	t.verifying[producerID] = verification{guard: t.nextGuard, startedMs: nowMs, epoch: epoch, tv2: tv2}
	return t.nextGuard, true, nil
}

// openAt reports whether the producer's transaction is open here at
// epoch.
func (e *Entry) openAt(epoch int16) bool { return e.CurrentTxnFirstOffset >= 0 && e.Epoch == epoch }

// Verifications is how many producers' verifications are under way.
func (t *Table) Verifications() int { return len(t.verifying) }

// ClearVerifications forgets every verification under way: a leader
// that resigns (or starts a new epoch) must not honour guards of its
// previous term.
func (t *Table) ClearVerifications() { clear(t.verifying) }

// CheckCoordinator is Check for a batch a coordinator of this broker
// writes (Kafka's AppendOrigin.COORDINATOR: the group coordinator's
// transactional offset commits, base sequence 0 each): only the
// producer's epoch is checked, as Kafka checks only it for such a batch;
// sequences and duplicates are the client's concern, and the coordinator
// is not a client.
func (t *Table) CheckCoordinator(h batch.Header) (Decision, error) {
	if !h.HasProducerID() {
		return Decision{Action: Append}, nil
	}
	if _, err := t.fenced(h); err != nil {
		return Decision{}, err
	}
	return Decision{Action: Append}, nil
}

// CheckCoordinatorVerified is CheckCoordinator with KIP-890 part 1's
// verification (the group coordinator's TxnOffsetCommit, verified with
// the transaction coordinator first): after the epoch, the guard, as
// CheckVerified judges it.
func (t *Table) CheckCoordinatorVerified(h batch.Header, guard uint64) (Decision, error) {
	if !h.HasProducerID() {
		return Decision{Action: Append}, nil
	}
	e, err := t.fenced(h)
	if err != nil {
		return Decision{}, err
	}
	return Decision{Action: Append}, t.checkGuard(h, e, true, guard)
}

// fenced returns the entry of h's producer (nil if it has none) unless h
// is refused before any sequence check: a new producer while the table is
// full, or an epoch older than the producer's.
func (t *Table) fenced(h batch.Header) (*Entry, error) {
	e, known := t.producers[h.ProducerID]
	if !known {
		if len(t.producers) >= t.maxProducers {
			return nil, fmt.Errorf("%w: producer %d refused, table holds %d", ErrTooManyProducers, h.ProducerID, len(t.producers))
		}
		return nil, nil
	}
	if h.ProducerEpoch < e.Epoch {
		return nil, fmt.Errorf("%w: producer %d epoch %d, current %d", ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.Epoch)
	}
	return e, nil
}

// checkTxnState refuses a non-transactional batch while the producer's
// transaction is open here, as Kafka's ProducerAppendInfo does after the
// sequence checks (a retry of a batch already written is a duplicate
// first).
func (e *Entry) checkTxnState(h batch.Header) error {
	if !h.IsTransactional() && e.CurrentTxnFirstOffset >= 0 {
		return fmt.Errorf("%w: producer %d, transaction open since offset %d", ErrInvalidTxnState, h.ProducerID, e.CurrentTxnFirstOffset)
	}
	return nil
}

// CheckMarker decides whether a transaction marker for producerID at
// producerEpoch, from the coordinator of coordinatorEpoch, may be written:
// a marker of an older producer epoch is fenced (INVALID_PRODUCER_EPOCH),
// one from an older coordinator too (TRANSACTION_COORDINATOR_FENCED), as
// Kafka's appendEndTxnMarker checks. A producer without state here (it
// wrote nothing to this partition, or its state expired) takes any marker.
// Errors wrap the package's sentinels.
func (t *Table) CheckMarker(producerID int64, producerEpoch int16, coordinatorEpoch int32, tv2 bool) error {
	e, ok := t.producers[producerID]
	if !ok {
		return nil
	}
	if producerEpoch < e.Epoch {
		return fmt.Errorf("%w: marker for producer %d epoch %d, current %d", ErrInvalidProducerEpoch, producerID, producerEpoch, e.Epoch)
	}
	// tv2 (WriteTxnMarkers v2, KIP-1228) is not enforced: Kafka 4.2
	// refuses a version 2 marker that does not raise the producer's epoch,
	// but this coordinator's fencing abort after a failed fencing write
	// (Kafka's hasFailedEpochFence) writes one at the same epoch, and
	// refusing it left the transaction prepared for good (simulator seeds
	// 11 and 168).
	_ = tv2
	if coordinatorEpoch < e.CoordinatorEpoch {
		return fmt.Errorf("%w: marker for producer %d from coordinator epoch %d, last %d", ErrCoordinatorFenced, producerID, coordinatorEpoch, e.CoordinatorEpoch)
	}
	return nil
}

func badSequence(h batch.Header, why string) error {
	return fmt.Errorf("%w: producer %d epoch %d sequences %d..%d: %s",
		ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.LastSequence(), why)
}

// Update records a batch the leader has just appended after Check answered
// Append; h must carry the base offset the log assigned. It is the same
// transition as Apply, on purpose: the state after a run of produces must be
// exactly the state a rebuild from the log reaches.
func (t *Table) Update(h batch.Header) { t.Apply(h) }

// Apply replays one batch header read back from the log, with no checks: the
// log is the truth, so its order wins even where Check would have refused
// (as Kafka does for replicated batches). Batches without a producer id are
// ignored. Control batches (transaction markers) update the epoch and the
// timestamp but carry no sequences.
//
// A transactional data batch opens the producer's transaction on this
// partition if none is open (its base offset is the transaction's first
// offset). A control batch given to Apply ends nothing: markers go through
// ApplyMarker, which knows their outcome.
func (t *Table) Apply(h batch.Header) {
	e := t.entry(h)
	if e == nil || h.IsControl() {
		return
	}
	if h.IsTransactional() && e.CurrentTxnFirstOffset < 0 {
		e.CurrentTxnFirstOffset = h.BaseOffset
		t.ongoing[h.ProducerID] = h.BaseOffset
	}
	if h.IsTransactional() {
		// The open transaction now speaks for the producer (Kafka clears
		// the verification state on a transactional append).
		delete(t.verifying, h.ProducerID)
	}
	if h.BaseSequence < 0 {
		return
	}
	e.remember(BatchMetadata{
		FirstSeq:     h.BaseSequence,
		LastSeq:      h.LastSequence(),
		BaseOffset:   h.BaseOffset,
		LastOffset:   h.LastOffset(),
		MaxTimestamp: h.MaxTimestamp,
	})
}

// entry returns h's producer's entry, created if need be, with the epoch
// and timestamp of h applied; nil for a batch without a producer id.
func (t *Table) entry(h batch.Header) *Entry {
	if !h.HasProducerID() {
		return nil
	}
	e, known := t.producers[h.ProducerID]
	if !known {
		e = &Entry{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, Batches: make([]BatchMetadata, 0, WindowSize),
			CurrentTxnFirstOffset: -1, CoordinatorEpoch: -1}
		t.producers[h.ProducerID] = e
	}
	if h.ProducerEpoch != e.Epoch {
		// Sequences restart with every epoch, so older batches can no
		// longer be retried against this one.
		e.Epoch = h.ProducerEpoch
		e.Batches = e.Batches[:0]
	}
	e.LastTimestamp = h.MaxTimestamp
	return e
}

// CompletedTxn is a transaction a marker ended on this partition: the
// producer, the offsets of its first batch here and of the marker, and
// whether it was aborted (then its records are to be skipped by
// read_committed consumers: the aborted-transaction index).
type CompletedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
	Aborted     bool
}

// ApplyMarker replays (or records, on the leader) the transaction marker
// h, whose content is m: the producer's open transaction ends (a marker
// with none open ends an empty one, first offset the marker's own, as
// Kafka's appendEndTxnMarker does), and the marker's producer epoch and
// coordinator epoch become the producer's. Like Apply it never refuses:
// CheckMarker decides before the leader appends.
func (t *Table) ApplyMarker(h batch.Header, m batch.Marker) CompletedTxn {
	done := CompletedTxn{ProducerID: h.ProducerID, FirstOffset: h.BaseOffset, LastOffset: h.LastOffset(), Aborted: !m.Commit}
	// A marker ends the transaction a verification under way was about:
	// a batch verified before it must not open a new one after it (the
	// race KAFKA-14884 closes: the coordinator answered "in the
	// transaction", then aborted it before the append). A transaction
	// version 2 producer's transaction ends with a marker of its next
	// epoch: a marker at or below the epoch being verified ended the
	// transaction before it, which that verification waits for.
	if v, ok := t.verifying[h.ProducerID]; !ok || !v.tv2 || h.ProducerEpoch > v.epoch {
		delete(t.verifying, h.ProducerID)
	}
	e := t.entry(h)
	if e == nil {
		return done
	}
	if e.CurrentTxnFirstOffset >= 0 {
		done.FirstOffset = e.CurrentTxnFirstOffset
	}
	e.CurrentTxnFirstOffset = -1
	delete(t.ongoing, h.ProducerID)
	e.CoordinatorEpoch = m.CoordinatorEpoch
	return done
}

// FirstUnstableOffset is the first offset of the earliest transaction
// still open on this partition, and whether there is one.
func (t *Table) FirstUnstableOffset() (int64, bool) {
	if len(t.ongoing) == 0 {
		return 0, false // every step asks; starting a map walk is not free
	}
	first, ok := int64(0), false
	for _, off := range t.ongoing {
		if !ok || off < first {
			first, ok = off, true
		}
	}
	return first, ok
}

// OngoingTransactions is how many producers have a transaction open here.
func (t *Table) OngoingTransactions() int { return len(t.ongoing) }

// ExpireOlderThan forgets producers whose last batch is at least
// retentionMs older than nowMs (Kafka's producer.id.expiration.ms, default
// one day). It returns how many producers were removed.
func (t *Table) ExpireOlderThan(nowMs, retentionMs int64) int {
	removed := 0
	for id, e := range t.producers {
		// A producer with an open transaction is kept (as Kafka's
		// isProducerExpired): forgetting it would lose the transaction's
		// first offset, and the last stable offset with it.
		if nowMs-e.LastTimestamp >= retentionMs && e.CurrentTxnFirstOffset < 0 {
			delete(t.producers, id)
			removed++
		}
	}
	for id, v := range t.verifying {
		if nowMs-v.startedMs >= retentionMs {
			delete(t.verifying, id)
		}
	}
	return removed
}

// Lookup returns a copy of one producer's state.
func (t *Table) Lookup(producerID int64) (Entry, bool) {
	e, ok := t.producers[producerID]
	if !ok {
		return Entry{}, false
	}
	return e.clone(), true
}

// Entries returns a copy of all producer state, ordered by producer id, for
// snapshots, metrics and comparisons.
func (t *Table) Entries() []Entry {
	out := make([]Entry, 0, len(t.producers))
	for _, e := range t.producers {
		out = append(out, e.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}
