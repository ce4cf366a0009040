package producer

import "github.com/skein-log/skein/internal/batch"

// WindowSize is how many recent batches per producer are remembered for
// deduplication. Kafka clients keep at most 5 requests in flight per
// connection when idempotence is on, so a retry always targets one of the
// last 5 batches; anything older is answered as out of order, as Kafka does.
const WindowSize = 5

// BatchMetadata is what the table keeps about one appended batch: enough to
// recognise a retry of it and to answer the retry with the original offsets.
type BatchMetadata struct {
	FirstSeq     int32
	LastSeq      int32
	BaseOffset   int64
	LastOffset   int64
	MaxTimestamp int64
}

// Entry is the state of one producer on one partition.
type Entry struct {
	ProducerID int64
	Epoch      int16
	// Batches holds the most recent batches of the current epoch, oldest
	// first, at most WindowSize of them.
	Batches []BatchMetadata
	// LastTimestamp is the max timestamp of the last batch or marker
	// applied; producer expiry is measured from it (as Kafka's
	// producer.id.expiration.ms).
	LastTimestamp int64
	// CurrentTxnFirstOffset is the offset of the first batch of the
	// producer's ongoing transaction on this partition, -1 when none is
	// open: the last stable offset stays at or below it until a marker
	// ends the transaction.
	CurrentTxnFirstOffset int64
	// CoordinatorEpoch is the epoch of the transaction coordinator whose
	// marker was applied last (-1 before any): a marker from an older
	// coordinator is fenced (TRANSACTION_COORDINATOR_FENCED).
	CoordinatorEpoch int32
}

// lastSeq is the last sequence written in the current epoch, or
// batch.NoSequence when the epoch has no data batch yet.
func (e *Entry) lastSeq() int32 {
	if len(e.Batches) == 0 {
		return batch.NoSequence
	}
	return e.Batches[len(e.Batches)-1].LastSeq
}

// findDuplicate returns the remembered batch with exactly this sequence
// range. Kafka matches both ends: a retry resends the identical batch.
func (e *Entry) findDuplicate(firstSeq, lastSeq int32) (BatchMetadata, bool) {
	for _, b := range e.Batches {
		if b.FirstSeq == firstSeq && b.LastSeq == lastSeq {
			return b, true
		}
	}
	return BatchMetadata{}, false
}

// remember adds a batch to the window, dropping the oldest beyond WindowSize.
func (e *Entry) remember(m BatchMetadata) {
	if len(e.Batches) == WindowSize {
		copy(e.Batches, e.Batches[1:])
		e.Batches = e.Batches[:WindowSize-1]
	}
	e.Batches = append(e.Batches, m)
}

// clone returns a deep copy, so callers of Entries cannot alter the table.
func (e *Entry) clone() Entry {
	c := *e
	c.Batches = append([]BatchMetadata(nil), e.Batches...)
	return c
}

// inSequence reports whether next directly follows last. Sequences wrap from
// int32 max to 0, and a producer with no data batch in its epoch
// (last == NoSequence) must start at 0.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == maxSequence)
}

const maxSequence = int32(^uint32(0) >> 1)
