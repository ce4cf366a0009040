package sim

import (
	"fmt"
	"time"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/records"
	"github.com/skein-log/skein/internal/txn"
)

// txnCoordChecks are the transaction coordinator's invariants: a producer
// fenced by a newer InitProducerId answer for its transactional id never
// commits afterwards, and (at the end) every transactional id's records
// in __transaction_state follow Kafka's state transitions with epochs
// that never go back for a producer id.
type txnCoordChecks struct {
	// inits are the InitProducerId answers per transactional id, in the
	// order clients received them.
	inits map[string][]txnInit
	// txnOf names the transaction of each record the clients wrote;
	// commitSent holds the transactions an EndTxn(commit) was sent for:
	// only those can ever be committed.
	txnOf      map[string]string
	commitSent map[string]bool
	// outcomes are the acknowledged batches and EndTxn answers per
	// transaction; reader is the read_committed reader whose deliveries
	// the all-or-nothing check judges (checker_txn_atomic.go).
	outcomes map[string]*txnOutcome
	reader   *txnReader
}

type txnInit struct {
	pid   int64
	epoch int16
	at    time.Duration
}

func newTxnCoordChecks() txnCoordChecks {
	return txnCoordChecks{inits: map[string][]txnInit{}, txnOf: map[string]string{}, commitSent: map[string]bool{}, outcomes: map[string]*txnOutcome{}}
}

func (k *checker) txnCoordRecord(v, txnName string) { k.txnCoord.txnOf[v] = txnName }

func (k *checker) txnCoordCommitSent(txnName string) { k.txnCoord.commitSent[txnName] = true }

// txnCoordDelivered: a read_committed reader delivered v. A record of a
// coordinator client's transaction that no EndTxn(commit) was sent for
// belongs to a transaction the coordinator can only have aborted (or not
// decided): read_committed must never show it.
func (k *checker) txnCoordDelivered(v string, part int32, off int64, leader int32) {
	name, ok := k.txnCoord.txnOf[v]
	if !ok {
		return
	}
	k.stats.TxnCoordRead++
	if k.txnCoord.commitSent[name] || !k.strict() {
		return
	}
	k.c.violation("read_committed delivered %s (partition %d offset %d, from n%d) of transaction %s, never committed by its producer", v, part, off, leader, name)
}

// txnInitAnswered: a client got pid and epoch for id.
func (k *checker) txnInitAnswered(id string, pid int64, epoch int16) {
	k.txnCoord.inits[id] = append(k.txnCoord.inits[id], txnInit{pid, epoch, k.c.s.now})
	k.stats.TxnCoordInits++
}

// txnEndAcked: EndTxn, sent at sentAt by the producer pid/epoch of id,
// succeeded. A commit is a violation if, before it was sent, another
// client had been given a newer epoch (or another producer id) for id:
// that InitProducerId fenced this producer, whose transaction the
// coordinator must have aborted.
func (k *checker) txnEndAcked(id string, pid int64, epoch int16, commit bool, sentAt time.Duration) {
	k.stats.TxnCoordEnds++
	if !commit {
		return
	}
	for _, in := range k.txnCoord.inits[id] {
		if in.at >= sentAt {
			break
		}
		if in.pid != pid || in.epoch > epoch {
			k.c.violation("transactional id %s: producer %d epoch %d committed after producer %d epoch %d was initialized at %v",
				id, pid, epoch, in.pid, in.epoch, in.at)
			return
		}
	}
}

// finalTxnCheck replays the converged __transaction_state partitions and
// checks each id's sequence of states.
func (k *checker) finalTxnCheck(ctl *process) bool {
	t, ok := ctl.image.Topic(txnStateTopic)
	if !ok {
		return true
	}
	for _, st := range t.Partitions {
		lr := k.c.nodes[st.Leader].proc.parts[partKey{t.ID, st.Index}]
		recs, err := readRecords(lr, lr.core.HighWatermark())
		if err != nil {
			k.c.violation("%s-%d: %v", txnStateTopic, st.Index, err)
			return false
		}
		last := map[string]*txn.Txn{}
		for _, rec := range recs {
			id, next, err := txn.DecodeRecord(rec.rec)
			if err != nil {
				k.c.violation("%s-%d offset %d: %v", txnStateTopic, st.Index, rec.offset, err)
				return false
			}
			if msg := txnStep(last[id], next); msg != "" {
				k.c.violation("%s-%d offset %d: transactional id %s: %s", txnStateTopic, st.Index, rec.offset, id, msg)
				return false
			}
			last[id] = next
		}
	}
	return true
}

// txnStep judges one record of an id after the previous one (nil: none,
// or a tombstone), "" if it is a valid step.
func txnStep(prev, next *txn.Txn) string {
	switch {
	case next == nil && prev == nil:
		return "a tombstone for an id without state"
	case next == nil:
		if !txn.ValidTransition(prev.State, txn.Dead) {
			return fmt.Sprintf("removed in state %s", prev.State)
		}
		return ""
	case prev == nil:
		if next.State != txn.Empty {
			return fmt.Sprintf("first state %s, want Empty", next.State)
		}
		return ""
	case !txn.ValidTransition(prev.State, next.State):
		return fmt.Sprintf("%s -> %s", prev.State, next.State)
	case next.ProducerID == prev.ProducerID && next.Epoch < prev.Epoch:
		return fmt.Sprintf("epoch of producer %d went back from %d to %d", next.ProducerID, prev.Epoch, next.Epoch)
	case next.ProducerID != prev.ProducerID && next.State != txn.Empty &&
		!(prev.NextProducerID == next.ProducerID && next.Epoch == 0 && (next.State == txn.CompleteCommit || next.State == txn.CompleteAbort)):
		// (Transaction version 2 rotates an exhausted producer id at the
		// completion, to the prepared state's NextProducerID.)
		return fmt.Sprintf("producer id changed from %d to %d in state %s", prev.ProducerID, next.ProducerID, next.State)
	case next.ClientTV >= txn.TV2 && (next.State == txn.PrepareCommit || next.State == txn.PrepareAbort && prev.State != txn.Ongoing) &&
		next.Epoch != prev.Epoch+1:
		// KIP-890 part 2: a version 2 client's end bumps the epoch. (A
		// coordinator's fencing abort of an ongoing one bumps it too,
		// unless an earlier fencing write failed: Kafka's
		// hasFailedEpochFence.)
		return fmt.Sprintf("version 2 transaction ended at epoch %d, it was at %d", next.Epoch, prev.Epoch)
	case next.ClientTV < txn.TV2 && next.State == txn.PrepareCommit && next.Epoch != prev.Epoch,
		next.State == txn.CompleteCommit && next.ProducerID == prev.ProducerID && next.Epoch != prev.Epoch:
		return fmt.Sprintf("committed at epoch %d, the transaction was at %d", next.Epoch, prev.Epoch)
	}
	return ""
}

type offsetRecord struct {
	offset int64
	rec    txn.Record
}

// readRecords reads the records of a replica's log below upTo, without
// the control batches.
func readRecords(r *replica, upTo int64) ([]offsetRecord, error) {
	var out []offsetRecord
	err := scanBatches(r, upTo, func(h batch.Header, recs []records.Record) {
		if h.IsControl() {
			return
		}
		for _, rec := range recs {
			out = append(out, offsetRecord{rec.Offset(h), txn.Record{Key: rec.Key, Value: rec.Value}})
		}
	})
	return out, err
}

// txnVerifyStarted: a leader began a transactional produce; need says it
// had to ask the coordinator.
func (k *checker) txnVerifyStarted(need bool) {
	if need {
		k.stats.TxnVerifications++
	}
}

// txnVerifyBound records how many transactional ids one leader has
// waiting for verification (bounded by txnverify's limits).
func (k *checker) txnVerifyBound(waiting int) {
	k.stats.TxnVerifyMaxWaiting = max(k.stats.TxnVerifyMaxWaiting, waiting)
}

// txnStrayAcked: a leader accepted a transactional batch for a partition
// the producer's transaction never added. A leader that verifies must
// refuse it (KIP-890 part 1): the transaction it opens there is one no
// coordinator knows, so it hangs, holding the last stable offset back,
// until a later transaction of the producer ends it with that
// transaction's outcome.
func (k *checker) txnStrayAcked(id, name string, part int32) {
	k.stats.TxnStraysAcked++
	if !k.strict() {
		return
	}
	k.c.violation("partition %d accepted stray batch %s of %s, outside its transaction (hanging transaction)", part, name, id)
}
