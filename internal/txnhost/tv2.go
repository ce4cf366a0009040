package txnhost

import "github.com/skein-log/skein/internal/txn"

// EndTxnV2 is EndTxn of a transaction version 2 client. As InitProducerID,
// it asks once without a new producer id and allocates one (outside the
// serialisation) only if the epoch is exhausted.
func (b Backend) EndTxnV2(req txn.EndRequest, done func(txn.EndResult)) {
	fail := func(err error) { done(txn.EndResult{Err: err, ProducerID: -1, Epoch: -1}) }
	withProducerID(b, req.TransactionalID, func(c *txn.Coordinator, now, newID int64) (txn.EndResult, txn.Output) {
		req.NewProducerID = newID
		return c.EndTxnV2(now, req)
	}, func(r txn.EndResult) error { return r.Err }, fail, done)
}

// AddPartitionsV2 adds partitions for a transaction version 2 client.
func (b Backend) AddPartitionsV2(id string, producerID int64, epoch int16, parts []txn.TopicPartition, done func(error)) {
	b.change(id, func(c *txn.Coordinator, now int64) (txn.Output, error) {
		return c.AddPartitionsV2(now, id, producerID, epoch, parts)
	}, done)
}
