package replica

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/producer"
	"github.com/skein-log/skein/internal/storage"
)

// Transactions, the partition's side (KIP-98): transactional batches open
// a producer's transaction here (producer.Table), a marker written by
// WriteTxnMarker on the leader, or copied from it by a follower, ends it,
// and an aborted one goes into the log's aborted-transaction index. The
// last stable offset (LSO) is the high watermark, or the first offset of
// the earliest transaction that is open or whose marker is not yet below
// the high watermark (Kafka's unreplicated transactions), if lower:
// read_committed consumers read below it. Leader and follower apply every
// batch through applyBatch, so a promoted follower has the same open
// transactions.

// applyBatch updates the producer state for a batch just appended (or
// replayed) at h.BaseOffset; b is the whole batch for control batches. It
// returns the aborted-transaction index entry of a transaction an ABORT
// marker ended, nil otherwise.
func (r *Replica) applyBatch(h batch.Header, b []byte) *storage.AbortedTxn {
	if !h.IsControl() {
		r.producers.Apply(h)
		return nil
	}
	m, err := batch.ParseMarker(b)
	if err != nil {
		// Kafka ignores control records of types it does not know, and
		// the cleaner empties markers it keeps only for their producer's
		// epoch; an epoch still counts.
		if h.RecordCount > 0 {
			r.opts.Logger.Warn("control batch is not a transaction marker; ignored", "offset", h.BaseOffset, "err", err)
		}
		r.producers.Apply(h)
		return nil
	}
	done := r.producers.ApplyMarker(h, m)
	r.addPending(done)
	if !done.Aborted {
		return nil
	}
	entry := r.abortEntry(done)
	return &entry
}

// applyAppended is applyBatch for a batch this replica just appended: an
// abort goes into the log's index at once.
func (r *Replica) applyAppended(h batch.Header, b []byte) error {
	if entry := r.applyBatch(h, b); entry != nil {
		return r.log.AddAbortedTxn(*entry)
	}
	return nil
}

// abortEntry is the index entry of an aborted transaction: its last
// stable offset is the first offset of the earliest transaction still
// open, or the one after the marker (Kafka's lastStableOffset(completedTxn)).
func (r *Replica) abortEntry(done producer.CompletedTxn) storage.AbortedTxn {
	lso := done.LastOffset + 1
	if first, ok := r.producers.FirstUnstableOffset(); ok {
		lso = min(lso, first)
	}
	return storage.AbortedTxn{ProducerID: done.ProducerID, FirstOffset: done.FirstOffset, LastOffset: done.LastOffset, LastStableOffset: lso}
}

// addPending keeps a completed transaction until the high watermark passes
// its marker: until then a read_committed reader must not pass its first
// offset, since the marker may yet be truncated. Only the entries that
// can decide the LSO are kept: pending is in marker order with strictly
// increasing first offsets, so its first entry past the high watermark is
// the minimum (an earlier-marker entry with a later first offset never
// is).
//
// Rebuilding a reopened replica (whose high watermark starts at its log
// start) finds every transaction of the log pending, so the list is
// bounded: at maxPending entries, neighbours are merged pairwise into one
// entry holding the earlier first offset and the later marker. That only
// keeps the LSO lower for longer (until the high watermark passes the
// later marker), never above a transaction's first offset nor lower than
// it already was.
func (r *Replica) addPending(done producer.CompletedTxn) {
	if done.LastOffset < r.hw {
		return
	}
	for n := len(r.pending); n > 0 && r.pending[n-1].FirstOffset >= done.FirstOffset; n-- {
		r.pending = r.pending[:n-1]
	}
	r.pending = append(r.pending, done)
	if len(r.pending) >= maxPending {
		merged := r.pending[:0]
		for i := 0; i < len(r.pending); i += 2 {
			e := r.pending[i]
			if i+1 < len(r.pending) {
				e.LastOffset = r.pending[i+1].LastOffset
			}
			merged = append(merged, e)
		}
		clear(r.pending[len(merged):])
		r.pending = merged
	}
}

// maxPending bounds the completed transactions kept for the LSO (32 bytes
// each).
const maxPending = 4096

// LastStableOffset is the partition's last stable offset (see above).
func (r *Replica) LastStableOffset() int64 {
	i := 0
	for i < len(r.pending) && r.pending[i].LastOffset < r.hw {
		i++
	}
	if i > 0 {
		r.pending = append(r.pending[:0], r.pending[i:]...)
	}
	lso := r.hw
	if len(r.pending) > 0 {
		lso = min(lso, r.pending[0].FirstOffset)
	}
	if first, ok := r.producers.FirstUnstableOffset(); ok {
		lso = min(lso, first)
	}
	return lso
}

// OngoingTransactions is how many producers have a transaction open on
// this partition.
func (r *Replica) OngoingTransactions() int { return r.producers.OngoingTransactions() }

// StartTxnVerification is the first step of a transactional produce from
// a producer with no transaction open here, when the leader verifies
// transactions (KIP-890 part 1): it returns the guard the produce must
// carry once the coordinator has confirmed the partition is in the
// producer's transaction, and whether that confirmation is needed at all
// (not when the producer's transaction is already open here). A marker
// or another transactional batch of the producer in between voids the
// guard, so the produce is then refused with INVALID_TXN_STATE.
func (r *Replica) StartTxnVerification(producerID int64, epoch int16, tv2 bool, nowMs int64) (uint64, bool, error) {
	switch {
	case r.closed || r.leader == nil:
		return 0, false, kerr.NotLeaderForPartition
	case r.failed != nil:
		return 0, false, fmt.Errorf("%w: %v", kerr.KafkaStorageError, r.failed)
	}
	guard, need, err := r.producers.StartVerification(producerID, epoch, tv2, nowMs)
	if err != nil {
		// Retriable without a metadata refresh, as Kafka answers a
		// verification it could not complete.
		return 0, false, fmt.Errorf("%w: %v", kerr.NotEnoughReplicas, err)
	}
	return guard, need, nil
}

// WriteTxnMarker appends the marker that ends producer p.ProducerID's
// transaction (WriteTxnMarkers, from the transaction coordinator) and
// answers once the high watermark has passed it, as Kafka appends markers
// with acks=all: the coordinator moves on only when every in-sync replica
// holds the outcome. A marker of an older producer epoch is refused with
// INVALID_PRODUCER_EPOCH, one from an older coordinator epoch than the
// last marker's with TRANSACTION_COORDINATOR_FENCED.
func (r *Replica) WriteTxnMarker(p api.TxnMarkerParams, done func(api.ProduceResult), nowMs int64) (WaiterID, Ready) {
	var rd Ready
	r.nextID++
	id := r.nextID
	refuse := func(err error) (WaiterID, Ready) {
		rd.Answers = append(rd.Answers, failed(id, done, err))
		return id, rd
	}
	switch {
	case r.closed || r.leader == nil:
		return refuse(kerr.NotLeaderForPartition)
	case r.failed != nil:
		return refuse(fmt.Errorf("%w: %v", kerr.KafkaStorageError, r.failed))
	}
	if err := r.leader.CheckAcksAll(); err != nil {
		return refuse(err)
	}
	if err := r.producers.CheckMarker(p.ProducerID, p.ProducerEpoch, p.CoordinatorEpoch, p.TransactionVersion >= 2); err != nil {
		return refuse(err)
	}
	b := batch.BuildMarker(p.ProducerID, p.ProducerEpoch, batch.Marker{Commit: p.Commit, CoordinatorEpoch: p.CoordinatorEpoch}, nowMs)
	ar, err := r.log.AppendValidated(b, r.leaderEpoch, nowMs)
	if err != nil {
		r.appendFailed(id, done, err, &rd)
		return id, rd
	}
	h, _ := batch.ParseHeader(b)
	h.BaseOffset = ar.BaseOffset
	if err := r.applyAppended(h, b); err != nil {
		// The marker is in the log but its abort is not indexed: a
		// read_committed reader would be shown aborted records. The
		// index write failed the log; the reopen rebuilds the index.
		return refuse(fmt.Errorf("%w: %v", kerr.KafkaStorageError, err))
	}
	rd.MessagesIn, rd.BytesIn = 1, int64(len(b))
	r.afterAppend(1, &rd)
	w := &waiter{id: id, target: ar.LastOffset + 1, all: true,
		result: api.ProduceResult{BaseOffset: ar.BaseOffset, LogAppendTime: -1, LogStartOffset: r.log.LogStartOffset()}, done: done}
	if r.ackSatisfied(w) {
		rd.Answers = append(rd.Answers, Answer{ID: id, Done: done, Result: w.result})
		return id, rd
	}
	r.park(w, p.Timeout.Milliseconds(), &rd)
	return id, rd
}
