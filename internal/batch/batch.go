// Package batch reads and validates the fixed header of Kafka v2 record
// batches ("magic 2") without decoding or decompressing the records.
//
// The broker stores batches exactly as producers sent them. It only rewrites
// two header fields that lie outside the CRC: the base offset and the
// partition leader epoch. That keeps appends cheap (no recompression, no CRC
// recomputation) and lets consumers verify the producer's CRC end to end.
//
// Layout (big-endian), from the Kafka protocol documentation:
//
//	 0 baseOffset            int64
//	 8 batchLength           int32  bytes after this field
//	12 partitionLeaderEpoch  int32
//	16 magic                 int8   (2)
//	17 crc                   uint32 CRC-32C of bytes [21, end)
//	21 attributes            int16
//	23 lastOffsetDelta       int32
//	27 baseTimestamp         int64
//	35 maxTimestamp          int64
//	43 producerId            int64
//	51 producerEpoch         int16
//	53 baseSequence          int32
//	57 recordCount           int32
//	61 records...
package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// HeaderSize is the size of the v2 batch header, before the records.
const HeaderSize = 61

// MagicOffset is where the magic byte sits, in v2 batches and in the
// older message formats alike.
const MagicOffset = offMagic

// LogOverhead is the part of the header not counted by batchLength.
const LogOverhead = 12

// Field offsets in the header.
const (
	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57
)

// Attribute bits.
const (
	CompressionMask   = 0x07
	TimestampTypeBit  = 0x08 // 1 = LogAppendTime
	TransactionalBit  = 0x10
	ControlBit        = 0x20
	maxCompressionID  = 4 // zstd
	NoSequence        = -1
	NoProducerID      = -1
	crcCoveredFromOff = offAttributes
)

// Compression codecs as stored in the attributes.
const (
	CompressionNone   = 0
	CompressionGzip   = 1
	CompressionSnappy = 2
	CompressionLZ4    = 3
	CompressionZstd   = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors returned by Parse and Validate. They are distinct so the API layer
// can map them to Kafka error codes.
var (
	ErrTruncated      = errors.New("record batch truncated")
	ErrBadMagic       = errors.New("record batch magic is not 2")
	ErrBadCRC         = errors.New("record batch CRC mismatch")
	ErrBadLength      = errors.New("record batch length invalid")
	ErrBadCompression = errors.New("record batch compression codec unknown")
	ErrBadCount       = errors.New("record batch record count invalid")
)

// Header is the decoded fixed header of one batch.
type Header struct {
	BaseOffset      int64
	BatchLength     int32
	LeaderEpoch     int32
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	RecordCount     int32
}

// Size is the total size of the batch in bytes, header included.
func (h *Header) Size() int { return LogOverhead + int(h.BatchLength) }

// LastOffset is the offset of the last record in the batch.
func (h *Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Compression is the codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
func (h *Header) Compression() int { return int(h.Attributes & CompressionMask) }

// IsTransactional reports the transactional attribute.
func (h *Header) IsTransactional() bool { return h.Attributes&TransactionalBit != 0 }

// IsControl reports the control attribute.
func (h *Header) IsControl() bool { return h.Attributes&ControlBit != 0 }

// HasProducerID reports whether the batch is from an idempotent producer.
func (h *Header) HasProducerID() bool { return h.ProducerID >= 0 }

// LastSequence is the sequence number of the last record, wrapping at
// int32 max as Kafka does.
func (h *Header) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return NoSequence
	}
	s := int64(h.BaseSequence) + int64(h.LastOffsetDelta)
	if s > int64(^uint32(0)>>1) {
		s -= int64(^uint32(0)>>1) + 1
	}
	return int32(s)
}

// ParseHeader decodes the header at the start of b. It checks only that the
// header is present and that batchLength is plausible; it does not verify the
// CRC. b may hold more than one batch.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < HeaderSize {
		return h, ErrTruncated
	}
	h.BaseOffset = int64(binary.BigEndian.Uint64(b[offBaseOffset:]))
	h.BatchLength = int32(binary.BigEndian.Uint32(b[offBatchLength:]))
	h.LeaderEpoch = int32(binary.BigEndian.Uint32(b[offLeaderEpoch:]))
	h.Magic = int8(b[offMagic])
	h.CRC = binary.BigEndian.Uint32(b[offCRC:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[offAttributes:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[offBaseTimestamp:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[offMaxTimestamp:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[offProducerID:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[offProducerEpoch:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[offBaseSequence:]))
	h.RecordCount = int32(binary.BigEndian.Uint32(b[offRecordCount:]))
	if h.Magic != 2 {
		return h, ErrBadMagic
	}
	if h.BatchLength < HeaderSize-LogOverhead {
		return h, fmt.Errorf("%w: %d", ErrBadLength, h.BatchLength)
	}
	return h, nil
}

// Validate checks one complete batch: b must be exactly one batch. It verifies
// the magic, the length, the CRC-32C, the codec and the record count fields.
func Validate(b []byte) (Header, error) {
	h, err := parseWhole(b)
	if err != nil {
		return h, err
	}
	if got := crc32.Checksum(b[crcCoveredFromOff:], castagnoli); got != h.CRC {
		return h, fmt.Errorf("%w: stored %08x computed %08x", ErrBadCRC, h.CRC, got)
	}
	return h, checkFields(&h)
}

// ValidateFraming is Validate without the CRC, for a batch whose CRC its
// caller has checked moments before (the leader's produce path: the
// handler's records.Validate checks it, and the CRC over every byte is the
// one cost of validation that grows with the batch). It still refuses
// whatever would corrupt the log's framing: a wrong length, magic, codec
// or record count.
func ValidateFraming(b []byte) (Header, error) {
	h, err := parseWhole(b)
	if err != nil {
		return h, err
	}
	return h, checkFields(&h)
}

// parseWhole parses the header of b, which must be exactly one batch.
func parseWhole(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Size() != len(b) {
		return h, fmt.Errorf("%w: header says %d bytes, have %d", ErrBadLength, h.Size(), len(b))
	}
	return h, nil
}

// checkFields checks a client batch's codec and count fields.
func checkFields(h *Header) error {
	if h.Compression() > maxCompressionID {
		return fmt.Errorf("%w: %d", ErrBadCompression, h.Compression())
	}
	if h.LastOffsetDelta < 0 || h.RecordCount < 0 || (!h.IsControl() && h.RecordCount != h.LastOffsetDelta+1) {
		return fmt.Errorf("%w: count %d, last offset delta %d", ErrBadCount, h.RecordCount, h.LastOffsetDelta)
	}
	if h.RecordCount == 0 {
		return fmt.Errorf("%w: empty batch", ErrBadCount)
	}
	return nil
}

// Split walks a buffer holding consecutive batches (as in a produce request
// or a fetch response) and calls fn with each complete batch. It stops at the
// first error from fn. A partial trailing batch is reported as ErrTruncated.
func Split(b []byte, fn func(batch []byte) error) error {
	for len(b) > 0 {
		if len(b) < LogOverhead {
			return ErrTruncated
		}
		n := LogOverhead + int(int32(binary.BigEndian.Uint32(b[offBatchLength:])))
		if n < HeaderSize {
			return ErrBadLength
		}
		if n > len(b) {
			return ErrTruncated
		}
		if err := fn(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// SetBaseOffset rewrites the base offset in place. The field is outside the
// CRC, so the batch stays valid.
func SetBaseOffset(b []byte, offset int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(offset))
}

// SetLeaderEpoch rewrites the partition leader epoch in place (outside the CRC).
func SetLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// CRC computes the CRC-32C a batch should carry.
func CRC(b []byte) uint32 { return crc32.Checksum(b[crcCoveredFromOff:], castagnoli) }

// SetLogAppendTime stamps a batch with the broker's append time, as topics
// with message.timestamp.type=LogAppendTime require: the timestamp-type bit
// is set and the max timestamp replaced. Both lie inside the CRC, so the CRC
// is recomputed; consumers then read every record's timestamp as ts.
func SetLogAppendTime(b []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | TimestampTypeBit
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	SetMaxTimestamp(b, ts)
}

// SetMaxTimestamp replaces the max timestamp, which lies inside the CRC, so
// the CRC is recomputed: the produce path stores the largest record
// timestamp there when a producer's header disagrees, as Kafka does.
func SetMaxTimestamp(b []byte, ts int64) {
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[offCRC:], CRC(b))
}
