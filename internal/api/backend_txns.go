package api

import "github.com/skein-log/skein/internal/txn"

// TransactionStateTopic is Kafka's internal topic of transaction state; a
// transactional id's coordinator is the leader of its partition.
const TransactionStateTopic = "__transaction_state"

// TxnBackend is what the transaction handlers need: the coordinators of
// the __transaction_state partitions this broker leads. Calls for an id
// whose coordinator is elsewhere fail with NOT_COORDINATOR, for one still
// loading with COORDINATOR_LOAD_IN_PROGRESS. Answers with a done callback
// arrive once the coordinator's state record is committed, possibly from
// another goroutine.
type TxnBackend interface {
	// EnsureTransactionTopic creates __transaction_state through the
	// active controller if it does not exist yet (Kafka creates it on the
	// first FindCoordinator for a transactional id) and calls done once
	// this broker's image has it.
	EnsureTransactionTopic(done func(error))
	// InitProducerID may block while it allocates a producer id.
	InitProducerID(req txn.InitRequest, done func(txn.InitResult))
	AddPartitions(id string, producerID int64, epoch int16, parts []txn.TopicPartition, done func(error))
	// VerifyPartitions answers AddPartitionsToTxn v4+'s verify-only
	// transactions: one error per partition, or one for them all.
	VerifyPartitions(id string, producerID int64, epoch int16, parts []txn.TopicPartition) ([]error, error)
	EndTxn(id string, producerID int64, epoch int16, commit bool, done func(error))
	DescribeTransaction(id string) (txn.Txn, error)
	// ListTransactions lists the ids of every coordinator here; the error
	// is COORDINATOR_LOAD_IN_PROGRESS while one of them loads (the list
	// then holds the others').
	ListTransactions(f txn.ListFilter) ([]txn.Txn, error)
	TxnBackendV2
}

// TxnBackendV2 is the transaction coordinator's side of transaction
// version 2 (KIP-890 part 2), for the handlers of EndTxn v5 and
// AddPartitionsToTxn v5 when transaction.version 2 is finalized.
type TxnBackendV2 interface {
	// EndTxnV2 ends the transaction bumping the producer epoch; done
	// gets the producer id and epoch the client goes on with. It may
	// block while it allocates a producer id (an exhausted epoch).
	EndTxnV2(req txn.EndRequest, done func(txn.EndResult))
	// AddPartitionsV2 adds partitions for a version 2 client (the
	// implicit adds of Produce v12 and TxnOffsetCommit v5).
	AddPartitionsV2(id string, producerID int64, epoch int16, parts []txn.TopicPartition, done func(error))
}
