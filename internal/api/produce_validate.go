package api

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/records"
)

// maxUncompressedBatch bounds the decompressed records section of one
// produced batch. Checking streams through a small window, so this caps
// the work a decompression bomb costs rather than memory.
const maxUncompressedBatch = 64 << 20

// produceRules are the record rules of a topic, at the broker's time now.
func produceRules(tc config.TopicConfig, nowMs int64) records.Rules {
	return records.Rules{
		MaxUncompressed: maxUncompressedBatch,
		RequireKeys:     tc.Compact(),
		CreateTime:      tc.MessageTimestampType != "LogAppendTime",
		NowMs:           nowMs,
		BeforeMaxMs:     tc.MessageTimestampBeforeMaxMs,
		AfterMaxMs:      tc.MessageTimestampAfterMaxMs,
	}
}

// validateProduceRecords splits the records of one produce partition into
// batches and validates every record of every batch (records.Validate)
// before any of it may reach the log. A batch whose header's max timestamp
// disagrees with its records gets the computed one, as Kafka stores it.
func validateProduceRecords(recs []byte, maxMessageBytes int32, rules records.Rules, version int16, transactional bool) ([][]byte, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: no record batch", kerr.InvalidRecord)
	}
	// The magic byte sits at the same place in the old message formats, so
	// a pre-batch message set is recognised before its sizes are judged
	// by the v2 layout.
	if len(recs) > batch.MagicOffset && recs[batch.MagicOffset] != 2 {
		return nil, fmt.Errorf("%w: message format v%d; this broker stores only record batches (magic 2, Produce v3+)", kerr.UnsupportedForMessageFormat, recs[batch.MagicOffset])
	}
	var batches [][]byte
	err := batch.Split(recs, func(b []byte) error {
		if int64(len(b)) > int64(maxMessageBytes) {
			return fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes %d", kerr.MessageTooLarge, len(b), maxMessageBytes)
		}
		// Control batches, and transactional ones outside a
		// transactional request, are refused on the header alone,
		// before any record is decoded.
		if h, err := batch.ParseHeader(b); err == nil {
			switch {
			case h.IsControl():
				return fmt.Errorf("%w: clients cannot write control batches", kerr.InvalidRecord)
			case h.IsTransactional() && !transactional:
				return fmt.Errorf("%w: a transactional batch needs the request's transactional id", kerr.TransactionalIDAuthorizationFailed)
			case h.IsTransactional() && !h.HasProducerID():
				return fmt.Errorf("%w: a transactional batch needs a producer id", kerr.InvalidRecord)
			}
		}
		c, err := records.Validate(b, rules)
		if err != nil {
			return fmt.Errorf("batch %d: %w", len(batches), validationError(err, version))
		}
		if c.RefusedRecords > 0 {
			return newRecordErrors(c, version)
		}
		if c.Header.Attributes&batch.TimestampTypeBit == 0 && c.MaxTimestamp != c.Header.MaxTimestamp {
			batch.SetMaxTimestamp(b, c.MaxTimestamp)
		}
		batches = append(batches, b)
		return nil
	})
	if err != nil {
		if errors.Is(err, batch.ErrTruncated) || errors.Is(err, batch.ErrBadLength) {
			return nil, fmt.Errorf("%w: %v", kerr.CorruptMessage, err)
		}
		return nil, err
	}
	return batches, nil
}

// validationError maps a malformed batch to Kafka's codes: CORRUPT_MESSAGE
// when the bytes are damaged (CRC, sizes, a compressed stream that does
// not decompress), INVALID_RECORD when they are intact but lie about the
// records they hold. INVALID_RECORD came with Produce v8 (KIP-467); older
// versions get CORRUPT_MESSAGE, which their clients know.
func validationError(err error, version int16) error {
	switch {
	case errors.Is(err, batch.ErrBadCRC), errors.Is(err, batch.ErrBadLength), errors.Is(err, batch.ErrTruncated),
		errors.Is(err, records.ErrCodec):
		return fmt.Errorf("%w: %v", kerr.CorruptMessage, err)
	case errors.Is(err, records.ErrCorrupt), errors.Is(err, records.ErrTooLarge):
		return fmt.Errorf("%w: %v", invalidRecord(version), err)
	default:
		return fmt.Errorf("%w: %v", kerr.InvalidRecord, err)
	}
}

func invalidRecord(version int16) *kerr.Error {
	if version < 8 {
		return kerr.CorruptMessage
	}
	return kerr.InvalidRecord
}

// recordErrors is a batch refused for some of its records (KIP-467): the
// answer names each in record_errors, by its index in the batch.
type recordErrors struct {
	code    *kerr.Error
	message string
	records []records.RecordError
}

func (e *recordErrors) Error() string { return e.message }
func (e *recordErrors) Unwrap() error { return e.code }

// newRecordErrors words the answer as Kafka does: INVALID_TIMESTAMP when a
// timestamp was refused, else INVALID_RECORD with the first three reasons.
func newRecordErrors(c records.Checked, version int16) *recordErrors {
	e := &recordErrors{records: c.RecordErrors}
	if c.BadTimestamps {
		e.code = kerr.InvalidTimestamp
		e.message = "one or more records have been rejected due to an invalid timestamp"
	} else {
		e.code = invalidRecord(version)
		shown := make([]string, 0, 3)
		for _, r := range c.RecordErrors[:min(3, len(c.RecordErrors))] {
			shown = append(shown, fmt.Sprintf("record %d: %s", r.Index, r.Message))
		}
		e.message = fmt.Sprintf("one or more records have been rejected due to %d record errors in total, the first at most three: %s",
			c.RefusedRecords, strings.Join(shown, "; "))
	}
	return e
}

// fillPartitionError answers one produce partition with err, naming the
// refused records where the version carries them.
func fillPartitionError(sp *kmsg.ProduceResponseTopicPartition, err error, version int16) {
	sp.ErrorCode = ErrorCode(err)
	sp.ErrorMessage = ErrorMessage(err)
	var re *recordErrors
	if version < 8 || !errors.As(err, &re) {
		return
	}
	sp.ErrorRecords = make([]kmsg.ProduceResponseTopicPartitionErrorRecord, len(re.records))
	for i, r := range re.records {
		sp.ErrorRecords[i] = kmsg.NewProduceResponseTopicPartitionErrorRecord()
		sp.ErrorRecords[i].RelativeOffset = r.Index
		sp.ErrorRecords[i].ErrorMessage = kmsg.StringPtr(r.Message)
	}
}
