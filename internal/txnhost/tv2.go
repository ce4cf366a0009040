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
// It is the one request held while a state change of the id is in
// flight (Host.CallHolding): every transaction version 2 transaction has
// its own epoch, so a held add can only ever join the transaction of its
// epoch (a later one's end bumps the epoch and fences it). A version 1
// client's AddPartitionsToTxn and EndTxn keep the epoch from one
// transaction to the next: one held past its client's timeout could add
// a partition to the client's next transaction, which the client never
// asked for (the simulator found it, seed 101), so they are answered at
// once, as Kafka answers them.
func (b Backend) AddPartitionsV2(id string, producerID int64, epoch int16, parts []txn.TopicPartition, done func(error)) {
	b.change(id, true, func(c *txn.Coordinator, now int64) (txn.Output, error) {
		return c.AddPartitionsV2(now, id, producerID, epoch, parts)
	}, done)
}
