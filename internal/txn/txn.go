package txn

import (
	"math"
	"slices"

	"github.com/skein-log/skein/internal/group"
)

// TopicPartition names one partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Txn is the metadata Kafka keeps for one transactional id
// (TransactionMetadata).
type Txn struct {
	ID         string
	ProducerID int64
	// PrevProducerID is the producer id before the last rotation (epoch
	// exhaustion), -1 if none: a producer retrying the InitProducerId that
	// rotated it is recognised by it.
	PrevProducerID int64
	// NextProducerID (transaction version 2) is the producer id a
	// prepared transaction's completion rotates to, its epoch exhausted;
	// -1 if none.
	NextProducerID int64
	// ClientTV is the transaction version the transaction's client uses:
	// 2 once it ended or added partitions with KIP-890 part 2's requests,
	// else 0 (Kafka's ClientTransactionVersion).
	ClientTV int16
	Epoch    int16
	// LastEpoch is the epoch before the last bump by the same producer,
	// -1 if a new producer took over: a retried InitProducerId of that
	// bump gets the current epoch back (KIP-360). Kept in memory only, as
	// in Kafka.
	LastEpoch int16
	TimeoutMs int32
	State     State
	// Partitions of the transaction in progress, sorted.
	Partitions []TopicPartition
	// StartMs is when the transaction in progress started (-1: none);
	// UpdateMs when the metadata last changed.
	StartMs  int64
	UpdateMs int64
}

func (t Txn) clone() Txn {
	t.Partitions = slices.Clone(t.Partitions)
	return t
}

// noEpoch is RecordBatch.NO_PRODUCER_EPOCH.
const noEpoch = -1

// epochExhausted is Kafka's TransactionMetadata.isEpochExhausted: an
// epoch of Short.MaxValue - 1 or more cannot be bumped for a client,
// since the coordinator needs one more to fence it.
func epochExhausted(e int16) bool { return e >= math.MaxInt16-1 }

// PartitionFor is the __transaction_state partition of a transactional
// id, computed as Kafka does (the same hash as a group's).
func PartitionFor(transactionalID string, partitions int32) int32 {
	return group.PartitionFor(transactionalID, partitions)
}
