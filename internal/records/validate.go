package records

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/skein-log/skein/internal/batch"
)

// Rules are what a produced batch must satisfy besides being well formed,
// from the topic's configuration.
type Rules struct {
	// MaxUncompressed caps the records section once decompressed.
	MaxUncompressed int
	// RequireKeys: the topic is compacted, so every record needs a key.
	RequireKeys bool
	// CreateTime: the topic keeps producer timestamps, which must then lie
	// within [NowMs-BeforeMaxMs, NowMs+AfterMaxMs]
	// (message.timestamp.before.max.ms / after.max.ms).
	CreateTime              bool
	NowMs                   int64
	BeforeMaxMs, AfterMaxMs int64
}

// RecordError names one record a rule refused (KIP-467): Index is its
// position in the batch.
type RecordError struct {
	Index   int32
	Message string
	// Timestamp marks an INVALID_TIMESTAMP error; others are INVALID_RECORD.
	Timestamp bool
}

// Checked is what Validate learned of a well-formed batch.
type Checked struct {
	Header batch.Header
	// MaxTimestamp is the largest record timestamp (the header's own with
	// LogAppendTime), which the header's may not match: Kafka then stores
	// the computed one, and so do we.
	MaxTimestamp int64
	// RecordErrors lists the first MaxRecordErrors records the rules
	// refused, and RefusedRecords counts them all; the batch must not be
	// stored when there are any.
	RecordErrors   []RecordError
	RefusedRecords int
	// BadTimestamps: some refusal was a timestamp's, so the batch fails
	// with INVALID_TIMESTAMP as in Kafka.
	BadTimestamps bool
}

// MaxRecordErrors bounds the records one answer names: a 1 MiB batch of
// tiny keyless records sent to a compacted topic would otherwise make an
// answer many times the size of its request. Records beyond it fail with
// their batch all the same, only without their own entry.
const MaxRecordErrors = 1000

func (c *Checked) refuse(e RecordError) {
	c.BadTimestamps = c.BadTimestamps || e.Timestamp
	if c.RefusedRecords++; len(c.RecordErrors) < MaxRecordErrors {
		c.RecordErrors = append(c.RecordErrors, e)
	}
}

// Validate checks a batch a client produced, as Kafka's log validator does,
// in one pass and without copying: the header (batch.Validate: length, CRC,
// codec, record count agreeing with the last offset delta), then every
// record, decompressing through a small window when the batch is
// compressed. The batch must hold exactly its record count of records, with
// offset deltas 0, 1, ..., count-1, each record's fields inside the record
// and the records filling the section to its last byte. An error means the
// batch is malformed (ErrCorrupt, or ErrCodec inside it when it does not
// decompress, or ErrTooLarge, or a batch package error); a well-formed batch
// that breaks a rule comes back with RecordErrors.
func Validate(b []byte, rules Rules) (Checked, error) {
	h, err := batch.Validate(b)
	c := Checked{Header: h, MaxTimestamp: -1}
	if err != nil {
		return c, err
	}
	if h.HasProducerID() && h.BaseSequence < 0 {
		return c, fmt.Errorf("%w: sequence number %d in a batch of producer %d", ErrCorrupt, h.BaseSequence, h.ProducerID)
	}
	src, release, err := openSource(h, b[batch.HeaderSize:], rules.MaxUncompressed)
	if err != nil {
		return c, err
	}
	defer release()
	lower, upper := saturatingSub(rules.NowMs, rules.BeforeMaxMs), saturatingAdd(rules.NowMs, rules.AfterMaxMs)
	logAppend := h.Attributes&batch.TimestampTypeBit != 0
	if flatWalk && !src.streaming() && !logAppend {
		if maxTs, ok := validateFlat(src.buf, h, rules, lower, upper); ok {
			c.MaxTimestamp = maxTs
			return c, nil
		}
		// Something is wrong with a record: the walk below says what.
	}
	for i := range h.RecordCount {
		rec, err := readRecord(&src, false)
		if err != nil {
			return c, fmt.Errorf("record %d of %d: %w", i, h.RecordCount, err)
		}
		if rec.OffsetDelta != i {
			return c, fmt.Errorf("record %d: %w: offset delta %d, want %d", i, ErrCorrupt, rec.OffsetDelta, i)
		}
		ts := rec.Timestamp(h)
		c.MaxTimestamp = max(c.MaxTimestamp, ts)
		// One error per record, in Kafka's order: the key, then the time.
		switch {
		case rules.RequireKeys && rec.Key == nil:
			c.refuse(RecordError{Index: i, Message: "compacted topic cannot accept a record without a key"})
		case rules.CreateTime && ts != -1:
			if ts < lower || ts > upper {
				c.refuse(RecordError{Index: i, Timestamp: true,
					Message: fmt.Sprintf("timestamp %d of the record with offset %d is out of range; it must lie within [%d, %d]", ts, rec.Offset(h), lower, upper)})
			}
		case logAppend:
			c.refuse(RecordError{Index: i, Timestamp: true, Message: "a producer may not set the timestamp type to LogAppendTime"})
		}
	}
	done, err := src.atEnd()
	if err != nil {
		return c, fmt.Errorf("after the last of %d records: %w", h.RecordCount, err)
	}
	if !done {
		return c, fmt.Errorf("%w: bytes after the last of %d records", ErrCorrupt, h.RecordCount)
	}
	return c, nil
}

// flatWalk enables validateFlat (tests turn it off to compare).
var flatWalk = true

// validateFlat is Validate's walk over a records section held whole (an
// uncompressed batch, a decoded snappy block) for a batch that passes:
// the checks of readRecord and Validate's loop, with the varints decoded
// in place rather than through source and a Record per record: about half
// the time for 100-byte records, where the walk was the largest user-space
// cost of a leader's produce (docs/performance.md). It reports
// ok=false at the first record that is malformed or that a rule refuses,
// and Validate then walks the batch again with readRecord, which says what
// and where; so Validate's answers are the same either way
// (FuzzValidateLyingBatches compares them). Not for LogAppendTime batches,
// whose every record is refused.
func validateFlat(b []byte, h batch.Header, rules Rules, lower, upper int64) (maxTs int64, ok bool) {
	maxTs = -1
	pos := 0
	for i := range h.RecordCount {
		length, p, ok := flatVarint(b, pos)
		if !ok || length < minRecordSize-1 || int(length) > len(b)-p {
			return 0, false
		}
		end := p + int(length)
		p++ // attributes: unused in v2 (inside the record, as length >= 6)
		tsDelta, p, ok := flatVarlong(b, p)
		if !ok {
			return 0, false
		}
		offsetDelta, p, ok := flatVarint(b, p)
		if !ok || offsetDelta != i {
			return 0, false
		}
		keyLen, p, ok := flatVarint(b, p)
		if !ok || keyLen < -1 || int(keyLen) > end-p {
			return 0, false
		}
		if keyLen > 0 {
			p += int(keyLen)
		}
		valueLen, p, ok := flatVarint(b, p)
		if !ok || valueLen < -1 || int(valueLen) > end-p {
			return 0, false
		}
		if valueLen > 0 {
			p += int(valueLen)
		}
		headers, p, ok := flatVarint(b, p)
		if !ok || headers < 0 || int64(headers) > int64(end-p)/minHeaderSize {
			return 0, false
		}
		for range headers {
			n, q, ok := flatVarint(b, p)
			if !ok || n < 0 || int(n) > end-q { // a null header key is malformed
				return 0, false
			}
			p = q + int(n)
			if n, p, ok = flatVarint(b, p); !ok || n < -1 || int(n) > end-p {
				return 0, false
			}
			if n > 0 {
				p += int(n)
			}
		}
		if p != end {
			return 0, false
		}
		ts := h.BaseTimestamp + tsDelta
		switch {
		case rules.RequireKeys && keyLen == -1:
			return 0, false
		case rules.CreateTime && ts != -1 && (ts < lower || ts > upper):
			return 0, false
		}
		maxTs = max(maxTs, ts)
		pos = end
	}
	return maxTs, pos == len(b)
}

// flatVarlong decodes the zigzag varint at b[pos:] as source.varlong
// does: its value and the position after it, or ok=false when it is
// truncated or overflows 64 bits. The one-byte case (most fields of a
// record) is inlined.
func flatVarlong(b []byte, pos int) (int64, int, bool) {
	if uint(pos) < uint(len(b)) && b[pos] < 0x80 {
		x := b[pos]
		return int64(x>>1) ^ -int64(x&1), pos + 1, true
	}
	return flatVarlongLong(b, pos)
}

func flatVarlongLong(b []byte, pos int) (int64, int, bool) {
	if pos > len(b) {
		return 0, pos, false
	}
	v, n := binary.Varint(b[pos:])
	if n <= 0 {
		return 0, pos, false
	}
	return v, pos + n, true
}

// flatVarint is flatVarlong for a varint that must fit an int32.
func flatVarint(b []byte, pos int) (int32, int, bool) {
	if uint(pos) < uint(len(b)) && b[pos] < 0x80 {
		x := b[pos]
		return int32(x>>1) ^ -int32(x&1), pos + 1, true
	}
	return flatVarintLong(b, pos)
}

func flatVarintLong(b []byte, pos int) (int32, int, bool) {
	v, p, ok := flatVarlongLong(b, pos)
	if !ok || v < -1<<31 || v > 1<<31-1 {
		return 0, pos, false
	}
	return int32(v), p, true
}

// openSource opens the records section data of a batch with header h for
// one front-to-back pass, decompressing through a window (snappy: one
// block decoded whole, bounded by its declared length) and never past
// limit bytes. release returns pooled buffers and decompressors.
func openSource(h batch.Header, data []byte, limit int) (src source, release func(), err error) {
	switch codec := h.Compression(); codec {
	case batch.CompressionNone:
		return sliceSource(data), func() {}, nil
	case batch.CompressionSnappy:
		buf := snappyBufs.Get().(*[]byte)
		raw, err := decodeSnappy(*buf, data, limit)
		release := func() {
			if cap(raw) <= maxPooledSnappy {
				*buf = raw[:0]
			}
			snappyBufs.Put(buf)
		}
		if err != nil {
			release()
			return source{}, nil, err
		}
		return sliceSource(raw), release, nil
	default:
		st, err := openStream(codec, data)
		if err != nil {
			return source{}, nil, err
		}
		return source{r: st.r, window: st.window, limit: int64(limit)}, st.close, nil
	}
}

func saturatingSub(a, b int64) int64 {
	if b > 0 && a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

func saturatingAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// windowSize is how much decompressed data a streamed check holds at once.
const windowSize = 32 << 10

// maxPooledSnappy bounds the snappy output buffers kept for reuse: one
// batch of max.message.bytes (1 MiB by default) decoded, with room; a
// rarer larger one gets a buffer of its own.
const maxPooledSnappy = 4 << 20

// stream is a pooled decompressor reading one batch's records section.
type stream struct {
	r      io.Reader
	window []byte
	close  func()
}

// Decompressors keep large internal state (a zstd decoder its history
// window, a gzip reader its dictionary), so they are pooled per codec
// rather than built per batch on the produce path.
var (
	windows    = sync.Pool{New: func() any { b := make([]byte, windowSize); return &b }}
	snappyBufs = sync.Pool{New: func() any { return new([]byte) }}
	gzipPool   sync.Pool
	lz4Pool    sync.Pool
	zstdPool   sync.Pool
	zstdOpts   = []zstd.DOption{zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(maxZstdWindow)}
	emptyRead  = bytes.NewReader(nil)
)

func openStream(codec int, data []byte) (stream, error) {
	w := windows.Get().(*[]byte)
	st := stream{window: *w}
	release := func() { windows.Put(w) }
	in := bytes.NewReader(data)
	switch codec {
	case batch.CompressionGzip:
		zr, _ := gzipPool.Get().(*gzip.Reader)
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(in)
		} else {
			err = zr.Reset(in)
		}
		if err != nil {
			release()
			return st, fmt.Errorf("gzip: %w: %w", ErrCodec, err)
		}
		st.r = zr
		st.close = func() { gzipPool.Put(zr); release() }
	case batch.CompressionLZ4:
		lr, _ := lz4Pool.Get().(*lz4.Reader)
		if lr == nil {
			lr = lz4.NewReader(in)
		} else {
			lr.Reset(in)
		}
		st.r = lr
		st.close = func() { lr.Reset(emptyRead); lz4Pool.Put(lr); release() }
	case batch.CompressionZstd:
		zr, _ := zstdPool.Get().(*zstd.Decoder)
		var err error
		if zr == nil {
			zr, err = zstd.NewReader(in, zstdOpts...)
		} else {
			err = zr.Reset(in)
		}
		if err != nil {
			if zr != nil {
				zstdPool.Put(zr)
			}
			release()
			return st, fmt.Errorf("zstd: %w: %w", ErrCodec, err)
		}
		st.r = zr
		st.close = func() { zstdPool.Put(zr); release() }
	default:
		release()
		return st, fmt.Errorf("%w: codec %d", batch.ErrBadCompression, codec)
	}
	return st, nil
}
