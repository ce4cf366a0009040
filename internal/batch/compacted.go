package batch

import (
	"encoding/binary"
	"fmt"
)

// DeleteHorizonBit is the attribute bit KIP-534 added: when set, the
// batch's base timestamp holds the delete horizon, the time after which the
// log cleaner may remove the batch's tombstones. Record timestamps stay
// base timestamp + delta, so they are unchanged for readers.
const DeleteHorizonBit = 0x40

// HasDeleteHorizon reports the KIP-534 delete-horizon attribute.
func (h *Header) HasDeleteHorizon() bool { return h.Attributes&DeleteHorizonBit != 0 }

// ValidateStored is Validate for batches read back from a log, which log
// compaction may have filtered: a filtered batch keeps its offset range
// (base offset and last offset delta) but holds fewer records, possibly
// none when it is kept only for its producer's sequence numbers (Kafka's
// KAFKA-5443 shape). Client batches go through the stricter Validate.
func ValidateStored(b []byte) (Header, error) {
	h, err := parseWhole(b)
	if err != nil {
		return h, err
	}
	if got := CRC(b); got != h.CRC {
		return h, fmt.Errorf("%w: stored %08x computed %08x", ErrBadCRC, h.CRC, got)
	}
	if h.Compression() > maxCompressionID {
		return h, fmt.Errorf("%w: %d", ErrBadCompression, h.Compression())
	}
	if h.LastOffsetDelta < 0 || h.RecordCount < 0 || int64(h.RecordCount) > int64(h.LastOffsetDelta)+1 {
		return h, fmt.Errorf("%w: count %d, last offset delta %d", ErrBadCount, h.RecordCount, h.LastOffsetDelta)
	}
	return h, nil
}

// Filtered builds the batch that replaces orig after log compaction: the
// same offset range, leader epoch, producer id, epoch and base sequence,
// holding records (already encoded, uncompressed, with offset deltas
// relative to orig's base offset and timestamp deltas relative to
// baseTimestamp). attributes replaces orig's (the caller clears the codec
// and sets DeleteHorizonBit as needed). The CRC is recomputed.
func Filtered(orig Header, attributes int16, baseTimestamp, maxTimestamp int64, count int32, records []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(records))
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(orig.BaseOffset))
	be.PutUint32(b[offBatchLength:], uint32(HeaderSize-LogOverhead+len(records)))
	be.PutUint32(b[offLeaderEpoch:], uint32(orig.LeaderEpoch))
	b[offMagic] = 2
	be.PutUint16(b[offAttributes:], uint16(attributes))
	be.PutUint32(b[offLastOffsetDelta:], uint32(orig.LastOffsetDelta))
	be.PutUint64(b[offBaseTimestamp:], uint64(baseTimestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTimestamp))
	be.PutUint64(b[offProducerID:], uint64(orig.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(orig.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(orig.BaseSequence))
	be.PutUint32(b[offRecordCount:], uint32(count))
	b = append(b, records...)
	be.PutUint32(b[offCRC:], CRC(b))
	return b
}
