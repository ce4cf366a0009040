package txnhost

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/txn"
)

// Handle is a runtime's wrapper of one Host.
type Handle interface {
	// Do runs op with the Host and the time under the runtime's
	// serialisation and carries out the Ready it returns. An error from
	// op means there is nothing to carry out; Do returns it.
	Do(op func(h *Host, now int64) (Ready, error)) error
	// Writable is nil when the partition can take an acks=all write now.
	Writable() error
}

// Hosts finds the Handles of one broker.
type Hosts interface {
	// For is the Handle of a transactional id's coordinator here, or the
	// error a client gets (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS).
	For(transactionalID string) (Handle, error)
	// All lists the Handles here; the error is
	// COORDINATOR_LOAD_IN_PROGRESS when a partition led here has none yet.
	All() ([]Handle, error)
	// EnsureTransactionTopic is api.TxnBackend's.
	EnsureTransactionTopic(done func(error))
}

// Backend is the api.TxnBackend of a broker: each request goes to the
// coordinator of its transactional id's partition.
type Backend struct {
	Hosts Hosts
	// AllocateProducerID hands out a fresh producer id; it may block.
	AllocateProducerID func() (int64, error)
}

var _ api.TxnBackend = Backend{}

func (b Backend) EnsureTransactionTopic(done func(error)) { b.Hosts.EnsureTransactionTopic(done) }

// writeTo runs a request whose purpose is to write: when the partition
// cannot take an acks=all write now it is refused up front with
// COORDINATOR_NOT_AVAILABLE, as Kafka answers NOT_ENOUGH_REPLICAS here.
func writeTo(h Handle, fn func(c *txn.Coordinator, now int64) txn.Output, finish func(error)) error {
	if err := writable(h); err != nil {
		return err
	}
	return h.Do(func(host *Host, now int64) (Ready, error) { return host.Call(now, fn, finish) })
}

func writable(h Handle) error {
	if err := h.Writable(); err != nil {
		return fmt.Errorf("%w: the partition cannot take writes now: %v", kerr.CoordinatorNotAvailable, err)
	}
	return nil
}

// InitProducerID asks once without a new producer id; only if the
// coordinator needs one (a new transactional id, an exhausted epoch) is
// one allocated, outside the serialisation, and the request made again.
func (b Backend) InitProducerID(req txn.InitRequest, done func(txn.InitResult)) {
	fail := func(err error) { done(txn.InitResult{Err: err, ProducerID: -1, Epoch: -1}) }
	withProducerID(b, req.TransactionalID, func(c *txn.Coordinator, now, newID int64) (txn.InitResult, txn.Output) {
		req.NewProducerID = newID
		return c.InitProducerID(now, req)
	}, func(r txn.InitResult) error { return r.Err }, fail, done)
}

// withProducerID runs call on the id's coordinator, first with no new
// producer id (-1); if its result's error (errOf) is ErrNeedProducerID,
// one is allocated outside the serialisation and call runs again with
// it. done gets the answer once its write is committed; fail any error
// before or of the write.
func withProducerID[R any](b Backend, id string, call func(c *txn.Coordinator, now, newID int64) (R, txn.Output),
	errOf func(R) error, fail func(error), done func(R)) {
	h, err := b.Hosts.For(id)
	if err != nil {
		fail(err)
		return
	}
	newID := int64(-1)
	for attempt := 0; ; attempt++ {
		var res R
		err := writeTo(h, func(c *txn.Coordinator, now int64) txn.Output {
			var out txn.Output
			res, out = call(c, now, newID)
			return out
		}, func(werr error) {
			switch {
			case werr != nil:
				fail(werr)
			case errors.Is(errOf(res), txn.ErrNeedProducerID):
				// Not an answer: asked again below with an id.
			default:
				done(res)
			}
		})
		switch {
		case err != nil:
			fail(err)
			return
		case !errors.Is(errOf(res), txn.ErrNeedProducerID):
			return
		case attempt > 0:
			fail(fmt.Errorf("%w: the coordinator asked twice for a producer id", kerr.UnknownServerError))
			return
		}
		if newID, err = b.AllocateProducerID(); err != nil {
			fail(err)
			return
		}
	}
}

func (b Backend) AddPartitions(id string, producerID int64, epoch int16, parts []txn.TopicPartition, done func(error)) {
	b.change(id, false, func(c *txn.Coordinator, now int64) (txn.Output, error) {
		return c.AddPartitions(now, id, producerID, epoch, parts)
	}, done)
}

// change runs op, a request that may write, on the id's coordinator;
// done gets the write's failure, else op's own error. With hold, a
// request that meets a state change of the id in flight waits for it
// (Host.CallHolding). As writeTo, it is refused up front when the
// partition cannot take an acks=all write now.
func (b Backend) change(id string, hold bool, op func(c *txn.Coordinator, now int64) (txn.Output, error), done func(error)) {
	h, err := b.Hosts.For(id)
	if err == nil {
		err = writable(h)
	}
	if err == nil {
		err = h.Do(func(host *Host, now int64) (Ready, error) {
			if !hold {
				return host.CallNow(now, op, done)
			}
			return host.CallHolding(now, id, op, done)
		})
	}
	if err != nil {
		done(err)
	}
}

// cmpErr is the answer of a call: the write's failure, else the
// coordinator's own error.
func cmpErr(writeErr, opErr error) error {
	if writeErr != nil {
		return writeErr
	}
	return opErr
}

func (b Backend) VerifyPartitions(id string, producerID int64, epoch int16, parts []txn.TopicPartition) ([]error, error) {
	h, err := b.Hosts.For(id)
	if err != nil {
		return nil, err
	}
	var errs []error
	var opErr error
	err = h.Do(func(host *Host, _ int64) (Ready, error) {
		return Ready{}, host.Read(func(c *txn.Coordinator) { errs, opErr = c.VerifyPartitions(id, producerID, epoch, parts) })
	})
	return errs, cmpErr(err, opErr)
}

func (b Backend) EndTxn(id string, producerID int64, epoch int16, commit bool, done func(error)) {
	b.change(id, false, func(c *txn.Coordinator, now int64) (txn.Output, error) {
		return c.EndTxn(now, id, producerID, epoch, commit)
	}, done)
}

func (b Backend) DescribeTransaction(id string) (txn.Txn, error) {
	h, err := b.Hosts.For(id)
	if err != nil {
		return txn.Txn{}, err
	}
	var t txn.Txn
	var ok bool
	err = h.Do(func(host *Host, _ int64) (Ready, error) {
		return Ready{}, host.Read(func(c *txn.Coordinator) { t, ok = c.Describe(id) })
	})
	if err == nil && !ok {
		err = fmt.Errorf("%w: no transactional id %q", kerr.TransactionalIDNotFound, id)
	}
	return t, err
}

func (b Backend) ListTransactions(f txn.ListFilter) ([]txn.Txn, error) {
	hs, listErr := b.Hosts.All()
	var out []txn.Txn
	for _, h := range hs {
		err := h.Do(func(host *Host, now int64) (Ready, error) {
			return Ready{}, host.Read(func(c *txn.Coordinator) { out = append(out, c.List(now, f)...) })
		})
		if err != nil && listErr == nil && errors.Is(err, kerr.CoordinatorLoadInProgress) {
			listErr = err
		}
	}
	return out, listErr
}
