package txn

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TV2 is transaction version 2 (KIP-890 part 2) as a client's
// ClientTransactionVersion.
const TV2 int16 = 2

// EndRequest is EndTxn of a transaction version 2 client (EndTxn v5 with
// transaction.version 2 finalized).
type EndRequest struct {
	TransactionalID string
	ProducerID      int64
	Epoch           int16
	Commit          bool
	// NewProducerID is a fresh producer id the runtime allocated, or -1:
	// a call whose epoch is exhausted fails with ErrNeedProducerID.
	NewProducerID int64
}

// EndResult answers an EndRequest once its write (if any) is committed:
// the producer id and epoch the client uses from then on.
type EndResult struct {
	Err        error
	ProducerID int64
	Epoch      int16
}

func endFail(err error) EndResult { return EndResult{Err: err, ProducerID: -1, Epoch: -1} }

// EndTxnV2 is Kafka's handleEndTransaction for transaction version 2:
// every transaction's end bumps the producer epoch (the prepared state
// and its markers carry the new epoch), so a late write of the old epoch
// can never join the next transaction. At an exhausted epoch the
// completion rotates to a new producer id at epoch 0. A retry of an end
// that took effect is told the epoch it got; aborting with no
// transaction open (the client cannot know whether its produces added a
// partition) is allowed and bumps the epoch too.
func (c *Coordinator) EndTxnV2(now int64, req EndRequest) (EndResult, Output) {
	e, ok := c.txns[req.TransactionalID]
	if !ok {
		return endFail(fmt.Errorf("%w: no transactional id %q here", kerr.InvalidProducerIDMapping, req.TransactionalID)), Output{}
	}
	t := e.cur
	if e.pending != nil {
		return endFail(fmt.Errorf("%w: a state change of %q is being written", kerr.ConcurrentTransactions, t.ID)), Output{}
	}
	retryOnOverflow := t.PrevProducerID >= 0 && t.PrevProducerID == req.ProducerID && req.Epoch == math.MaxInt16-1 && t.Epoch == 0
	// Kafka's retryOnEpochBump checks the epoch before against
	// lastProducerEpoch; here the end remembers it (endedFrom), so an
	// epoch one below that another bump (InitProducerId's) made is not
	// taken for a retry: a zombie's end is fenced.
	retryOnBump := t.ProducerID == req.ProducerID && e.endedValid && e.endedFrom == req.Epoch && int(t.Epoch) == int(req.Epoch)+1
	if t.ProducerID != req.ProducerID && !retryOnOverflow {
		return endFail(fmt.Errorf("%w: producer id %d is not that of %q", kerr.InvalidProducerIDMapping, req.ProducerID, t.ID)), Output{}
	}
	var valid bool
	switch t.State {
	case Ongoing, Empty:
		valid = req.Epoch == t.Epoch
	case PrepareCommit, PrepareAbort:
		// The prepared state already carries the new epoch, which the
		// client learnt from its end's answer: an end at that epoch is
		// the next transaction's (franz-go aborts at once after a
		// rebalance, not knowing whether a produce added a partition),
		// told to wait below, not fenced.
		valid = retryOnBump || req.Epoch == t.Epoch
	case CompleteCommit, CompleteAbort:
		valid = retryOnBump || retryOnOverflow || req.Epoch == t.Epoch
	}
	if !valid {
		return endFail(fmt.Errorf("%w: epoch %d does not end the transaction of %q at epoch %d (%s)", kerr.ProducerFenced, req.Epoch, t.ID, t.Epoch, t.State)), Output{}
	}
	retry := retryOnBump || retryOnOverflow
	invalid := func() (EndResult, Output) {
		verb := "abort"
		if req.Commit {
			verb = "commit"
		}
		return endFail(fmt.Errorf("%w: cannot %s %q in state %s", kerr.InvalidTxnState, verb, t.ID, t.State)), Output{}
	}
	done := func() (EndResult, Output) { return EndResult{ProducerID: t.ProducerID, Epoch: t.Epoch}, Output{} }
	switch t.State {
	case Ongoing:
		return c.prepareEndV2(e, now, req, false)
	case CompleteCommit:
		switch {
		case req.Commit && retry:
			return done()
		case req.Commit, retry:
			return invalid()
		}
		return c.prepareEndV2(e, now, req, true)
	case CompleteAbort:
		switch {
		case req.Commit:
			return invalid()
		case retry:
			return done()
		}
		return c.prepareEndV2(e, now, req, true)
	case Empty:
		if req.Commit {
			return invalid()
		}
		return c.prepareEndV2(e, now, req, true)
	case PrepareCommit, PrepareAbort:
		if !retry {
			// The next transaction's end while this one's markers are
			// written: once it completes, the end goes on from there.
			return endFail(fmt.Errorf("%w: %q is completing its previous transaction", kerr.ConcurrentTransactions, t.ID)), Output{}
		}
		if req.Commit == (t.State == PrepareCommit) {
			return endFail(fmt.Errorf("%w: %q is completing that transaction", kerr.ConcurrentTransactions, t.ID)), Output{}
		}
	}
	return invalid()
}

// prepareEndV2 writes PrepareCommit or PrepareAbort at the next epoch
// (Kafka's prepareAbortOrCommit with transaction version 2). empty: no
// partition was added, so the transaction starts now (an abort of
// nothing, whose completion follows at once).
func (c *Coordinator) prepareEndV2(e *entry, now int64, req EndRequest, empty bool) (EndResult, Output) {
	t := e.cur
	if t.Epoch == math.MaxInt16 {
		// Only a fencing abort reaches it; the producer must initialize
		// again (which rotates its producer id).
		return endFail(fmt.Errorf("%w: epoch %d of %q cannot be bumped", kerr.ProducerFenced, t.Epoch, t.ID)), Output{}
	}
	next := t.clone()
	next.NextProducerID = -1
	res := EndResult{ProducerID: t.ProducerID, Epoch: t.Epoch + 1}
	if epochExhausted(t.Epoch) {
		if req.NewProducerID < 0 {
			return endFail(ErrNeedProducerID), Output{}
		}
		next.NextProducerID = req.NewProducerID
		res = EndResult{ProducerID: req.NewProducerID, Epoch: 0}
	}
	next.State = PrepareAbort
	if req.Commit {
		next.State = PrepareCommit
	}
	// LastEpoch is not the epoch before (Kafka's prepareAbortOrCommit
	// keeps it there): InitProducerId takes its producer's previous epoch
	// as a retry of a bump it answered, and would hand a zombie still at
	// that epoch the epoch this end gives its producer, two producers at
	// one epoch (found by the simulator, seed 1200). An end is no
	// InitProducerId to retry; a producer at the previous epoch is fenced.
	next.Epoch, next.LastEpoch = t.Epoch+1, noEpoch
	next.ClientTV = TV2
	next.UpdateMs = max(now, t.UpdateMs)
	if empty {
		next.StartMs, next.Partitions = next.UpdateMs, nil
	}
	w := c.transit(e, next, false)
	w.endV2, w.endFrom = true, t.Epoch
	return res, Output{Writes: []*Write{w}}
}

// AddPartitionsV2 is AddPartitions for a transaction version 2 client:
// AddPartitionsToTxn v5 from a partition leader adding itself (Produce
// v12's implicit add) or from a group coordinator (TxnOffsetCommit v5's
// implicit AddOffsetsToTxn). The transaction is marked as the client's
// transaction version 2.
func (c *Coordinator) AddPartitionsV2(now int64, id string, producerID int64, epoch int16, parts []TopicPartition) (Output, error) {
	out, err := c.AddPartitions(now, id, producerID, epoch, parts)
	if err != nil || len(out.Writes) == 0 {
		return out, err
	}
	for _, w := range out.Writes {
		if w.to != nil && w.to.ClientTV != TV2 {
			w.to.ClientTV = TV2
			w.Record = record(w.to)
		}
	}
	return out, nil
}
