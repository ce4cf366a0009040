package producer

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Errors returned by Table.Check. Each maps to one Kafka error code in the
// API layer; they are wrapped with detail, so match them with errors.Is.
var (
	// ErrOutOfOrderSequence maps to OUT_OF_ORDER_SEQUENCE_NUMBER (45): the
	// batch's first sequence does not follow the producer's last sequence
	// (a gap, a duplicate older than the dedup window, or a new epoch that
	// does not start at sequence 0).
	ErrOutOfOrderSequence = errors.New("out of order sequence number")

	// ErrInvalidProducerEpoch maps to INVALID_PRODUCER_EPOCH (47): the batch
	// carries an epoch older than the producer's current one, so it comes
	// from a fenced (zombie) instance.
	ErrInvalidProducerEpoch = errors.New("producer epoch is older than the current epoch")

	// ErrInvalidTxnState maps to INVALID_TXN_STATE (48): a
	// non-transactional batch from a producer whose transaction is still
	// open on this partition.
	ErrInvalidTxnState = errors.New("non-transactional batch from a producer with an open transaction")

	// ErrNotVerified maps to INVALID_TXN_STATE (48) too: a transactional
	// batch that would open a transaction on the partition without the
	// transaction coordinator having confirmed the partition is in it
	// (KIP-890 part 1), or whose confirmation a marker has overtaken.
	ErrNotVerified = errors.New("transactional batch not verified with the transaction coordinator")

	// ErrCoordinatorFenced maps to TRANSACTION_COORDINATOR_FENCED (52): a
	// transaction marker from a coordinator epoch older than the one whose
	// marker this partition applied last.
	ErrCoordinatorFenced = errors.New("transaction marker from a fenced coordinator epoch")

	// ErrTooManyProducers is returned for a producer the table does not know
	// while the table already holds its maximum number of producers. It
	// maps to THROTTLING_QUOTA_EXCEEDED (89), retriable: Kafka 4.x has no
	// such bound (producer state is bounded only by
	// producer.id.expiration.ms), and KIP-936, which would cap new
	// producer ids per principal at the partition leader, is still under
	// discussion; it proposes a quota whose clients are throttled and
	// resume, and 89 is Kafka's code for an exceeded throttling quota
	// (KIP-599), which the Java producer and franz-go retry. The table
	// shrinks as idle producers expire.
	ErrTooManyProducers = errors.New("too many idempotent producers on this partition")
)

// KafkaError is the Kafka error a refusal of the table (one of the
// errors above, wrapped or not) is answered with; false for any other
// error.
func KafkaError(err error) (*kerr.Error, bool) {
	switch {
	case errors.Is(err, ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber, true
	case errors.Is(err, ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch, true
	case errors.Is(err, ErrInvalidTxnState), errors.Is(err, ErrNotVerified):
		return kerr.InvalidTxnState, true
	case errors.Is(err, ErrCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced, true
	case errors.Is(err, ErrTooManyProducers):
		return kerr.ThrottlingQuotaExceeded, true
	}
	return nil, false
}

// ErrIDsExhausted is returned by IDAllocator.NextBlock when the next block
// would pass the largest producer id.
var ErrIDsExhausted = errors.New("producer ids exhausted")
