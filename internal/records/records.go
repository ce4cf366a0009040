// Package records decodes the records inside one Kafka v2 record batch, for
// the few places where the broker must look inside a batch (ListOffsets by
// timestamp, record validation). The broker otherwise stores and serves
// batches as opaque bytes.
//
// Record layout (varints are zigzag, as in protobuf):
//
//	length          varint  bytes after this field
//	attributes      int8    (unused)
//	timestampDelta  varlong
//	offsetDelta     varint
//	keyLength       varint  -1 = null
//	key             bytes
//	valueLength     varint  -1 = null
//	value           bytes
//	headerCount     varint
//	headers         [keyLength varint, key, valueLength varint, value]...
package records

import (
	"errors"
	"fmt"

	"github.com/skein-log/skein/internal/batch"
)

// Errors from Decode besides those of batch.ValidateStored.
var (
	// ErrCorrupt maps to CORRUPT_MESSAGE: the records do not decode.
	ErrCorrupt = errors.New("records corrupt")
	// ErrTooLarge: decompression would pass the caller's limit.
	ErrTooLarge = errors.New("decompressed records too large")
	// ErrCodec: the compressed records section does not decompress. It
	// wraps ErrCorrupt; Produce answers CORRUPT_MESSAGE for it, and
	// INVALID_RECORD for records that decode but lie about themselves.
	ErrCodec = fmt.Errorf("compressed %w", ErrCorrupt)
)

// Header is one record header. A nil Value is a null value.
type Header struct {
	Key   string
	Value []byte
}

// Record is one decoded record. Key and Value are nil for null and
// non-nil (possibly empty) otherwise. They alias the input batch for
// uncompressed batches and a fresh buffer for compressed ones.
type Record struct {
	OffsetDelta    int32
	TimestampDelta int64
	Key            []byte
	Value          []byte
	Headers        []Header
}

// Offset is the record's offset given its batch header.
func (r *Record) Offset(h batch.Header) int64 { return h.BaseOffset + int64(r.OffsetDelta) }

// Timestamp is the record's timestamp given its batch header. With
// LogAppendTime the broker's append time, stored as the batch's max
// timestamp, applies to every record.
func (r *Record) Timestamp(h batch.Header) int64 {
	if h.Attributes&batch.TimestampTypeBit != 0 {
		return h.MaxTimestamp
	}
	return h.BaseTimestamp + r.TimestampDelta
}

// FirstAtOrAfter finds, in the stored batch b (as Decode takes it), the
// first record in offset order whose timestamp is at least ts: what
// ListOffsets by timestamp answers with. It reads the records once,
// decompressing through a window and never past maxUncompressed bytes, and
// keeps none of them, so a lookup holds a small fixed amount of memory
// whatever the batch's size (a stored batch of many small records could
// otherwise decode to a slice far larger than itself, once per concurrent
// request). The batch must be well formed as Decode checks it up to the
// record found.
func FirstAtOrAfter(b []byte, ts int64, maxUncompressed int) (h batch.Header, offset, timestamp int64, found bool, err error) {
	h, err = batch.ValidateStored(b)
	if err != nil {
		return h, -1, -1, false, fmt.Errorf("timestamp lookup: %w", err)
	}
	if h.Compression() != batch.CompressionNone && maxUncompressed <= 0 {
		return h, -1, -1, false, fmt.Errorf("timestamp lookup: %w: limit %d", ErrTooLarge, maxUncompressed)
	}
	src, release, err := openSource(h, b[batch.HeaderSize:], maxUncompressed)
	if err != nil {
		return h, -1, -1, false, fmt.Errorf("timestamp lookup at offset %d: %w", h.BaseOffset, err)
	}
	defer release()
	prevDelta := int32(-1)
	for i := range h.RecordCount {
		rec, err := readRecord(&src, false)
		if err != nil {
			return h, -1, -1, false, fmt.Errorf("timestamp lookup at offset %d: record %d of %d: %w", h.BaseOffset, i, h.RecordCount, err)
		}
		if rec.OffsetDelta <= prevDelta || rec.OffsetDelta > h.LastOffsetDelta {
			return h, -1, -1, false, fmt.Errorf("timestamp lookup at offset %d: record %d: %w: offset delta %d after %d, last offset delta %d",
				h.BaseOffset, i, ErrCorrupt, rec.OffsetDelta, prevDelta, h.LastOffsetDelta)
		}
		prevDelta = rec.OffsetDelta
		if rts := rec.Timestamp(h); rts >= ts {
			return h, rec.Offset(h), rts, true, nil
		}
	}
	return h, -1, -1, false, nil
}

// minRecordSize is the smallest encoding of a record: a one-byte varint or
// int8 for each of its seven fields. It bounds allocations by input size.
const minRecordSize = 7

// Decode validates b, which must be exactly one v2 batch (CRC included; a
// batch filtered by log compaction may hold fewer records than its offset
// range, see batch.ValidateStored), and
// decodes its records, decompressing first if needed. maxUncompressed caps
// the decompressed size (e.g. twice message.max.bytes). The batch must hold
// exactly the header's record count, with offset deltas strictly increasing
// within [0, lastOffsetDelta]. Decode never panics on garbage.
func Decode(b []byte, maxUncompressed int) (batch.Header, []Record, error) {
	h, err := batch.ValidateStored(b)
	if err != nil {
		return h, nil, fmt.Errorf("decode batch: %w", err)
	}
	data := b[batch.HeaderSize:]
	if codec := h.Compression(); codec != batch.CompressionNone {
		if maxUncompressed <= 0 {
			return h, nil, fmt.Errorf("decode batch: %w: limit %d", ErrTooLarge, maxUncompressed)
		}
		if data, err = decompress(codec, data, maxUncompressed); err != nil {
			return h, nil, fmt.Errorf("decode batch at offset %d: %w", h.BaseOffset, err)
		}
	}
	recs, err := decodeRecords(h, data)
	if err != nil {
		return h, nil, fmt.Errorf("decode batch at offset %d: %w", h.BaseOffset, err)
	}
	return h, recs, nil
}

func decodeRecords(h batch.Header, data []byte) ([]Record, error) {
	recs := make([]Record, 0, min(int(h.RecordCount), len(data)/minRecordSize))
	src := sliceSource(data)
	prevDelta := int32(-1)
	for i := range int(h.RecordCount) {
		rec, err := readRecord(&src, true)
		if err != nil {
			return nil, fmt.Errorf("record %d of %d: %w", i, h.RecordCount, err)
		}
		if rec.OffsetDelta <= prevDelta || rec.OffsetDelta > h.LastOffsetDelta {
			return nil, fmt.Errorf("record %d: %w: offset delta %d after %d, last offset delta %d",
				i, ErrCorrupt, rec.OffsetDelta, prevDelta, h.LastOffsetDelta)
		}
		prevDelta = rec.OffsetDelta
		recs = append(recs, rec)
	}
	if rest := len(src.buf) - src.pos; rest != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last of %d records", ErrCorrupt, rest, h.RecordCount)
	}
	return recs, nil
}

// minHeaderSize is a header with an empty key and a null value.
const minHeaderSize = 2
