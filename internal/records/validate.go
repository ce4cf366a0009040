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
// in place rather than through source and a Record per record, and the
// one- and two-byte varints (nearly every field of records up to 8 KiB)
// without a call (a 1 MiB batch of 100-byte records, CRC included: 6.1M
// instructions with a call chain per varint, 2.7M now), where the walk was
// the largest user-space cost of a leader's produce (docs/performance.md).
// It reports ok=false at the first record that is malformed or that a rule
// refuses, and Validate then walks the batch again with readRecord, which
// says what and where; so Validate's answers are the same either way
// (FuzzValidateLyingBatches, TestValidateFlatVarintEncodings compare
// them). Not for LogAppendTime batches, whose every record is refused.
func validateFlat(b []byte, h batch.Header, rules Rules, lower, upper int64) (maxTs int64, ok bool) {
	maxTs = -1
	pos := 0
	for i := range int64(h.RecordCount) {
		// Each varint of one or two bytes (most fields of a record: a
		// 100-byte record's length, value length and offset delta take
		// two) is decoded inline by flatShort; longer ones by
		// flatUvarintLong, which Go cannot inline with flatShort (a call
		// per varint cost as much as the rest of the walk). A failed decode
		// makes the position negative, which fails every later decode and
		// the check at the record's end.
		u, p := flatShort(b, pos)
		if p == pos {
			u, p = flatUvarintLong(b, pos)
		}
		length := zigzag(u)
		if p < 0 || length < minRecordSize-1 || length > int64(len(b)-p) {
			return 0, false
		}
		end := p + int(length)
		p++ // attributes: unused in v2 (inside the record, as length >= 6)
		q := p
		if u, q = flatShort(b, p); q == p {
			u, q = flatUvarintLong(b, p)
		}
		tsDelta := zigzag(u)
		if u, p = flatShort(b, q); p == q {
			u, p = flatUvarintLong(b, q)
		}
		if zigzag(u) != i || p < 0 { // the offset delta
			return 0, false
		}
		if u, q = flatShort(b, p); q == p {
			u, q = flatUvarintLong(b, p)
		}
		keyLen := zigzag(u)
		if q < 0 || keyLen < -1 || keyLen > int64(end-q) {
			return 0, false
		}
		if p = q; keyLen > 0 {
			p += int(keyLen)
		}
		if u, q = flatShort(b, p); q == p {
			u, q = flatUvarintLong(b, p)
		}
		valueLen := zigzag(u)
		if q < 0 || valueLen < -1 || valueLen > int64(end-q) {
			return 0, false
		}
		if p = q; valueLen > 0 {
			p += int(valueLen)
		}
		if u, q = flatShort(b, p); q == p {
			u, q = flatUvarintLong(b, p)
		}
		if headers := zigzag(u); headers != 0 {
			if !flatHeaders(b, q, end, headers) {
				return 0, false
			}
			q = end
		}
		if q != end {
			return 0, false
		}
		ts := h.BaseTimestamp + tsDelta
		if rules.RequireKeys && keyLen == -1 {
			return 0, false
		}
		if rules.CreateTime && ts != -1 && (ts < lower || ts > upper) {
			return 0, false
		}
		maxTs = max(maxTs, ts)
		pos = end
	}
	return maxTs, pos == len(b)
}

// flatHeaders checks the n headers a record declares, from b[p:] to its
// end: whether they are well formed and fill the record exactly.
func flatHeaders(b []byte, p, end int, n int64) bool {
	if p < 0 || n < 0 || n > int64(end-p)/minHeaderSize {
		return false
	}
	for range n {
		u, q := flatShort(b, p)
		if q == p {
			u, q = flatUvarintLong(b, p)
		}
		k := zigzag(u)
		if q < 0 || k < 0 || k > int64(end-q) { // a null header key is malformed
			return false
		}
		p = q + int(k)
		if u, q = flatShort(b, p); q == p {
			u, q = flatUvarintLong(b, p)
		}
		v := zigzag(u)
		if q < 0 || v < -1 || v > int64(end-q) {
			return false
		}
		if p = q; v > 0 {
			p += int(v)
		}
	}
	return p == end
}

func zigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// flatShort decodes the varint at b[p:] when it takes one or two bytes
// and the records go on after it: its value and the position after it.
// Otherwise (a longer varint, one at the very end, a negative p after a
// failed field) it returns p unchanged and the caller asks
// flatUvarintLong. Small enough to be inlined.
func flatShort(b []byte, p int) (uint64, int) {
	if p >= 0 && p+1 < len(b) {
		if c := b[p]; c < 0x80 {
			return uint64(c), p + 1
		} else if d := b[p+1]; d < 0x80 {
			return uint64(c&0x7f) | uint64(d)<<7, p + 2
		}
	}
	return 0, p
}

// flatUvarintLong decodes the varint at b[pos:] as binary.Uvarint does:
// its value and the position after it, or a position of -1 when it is
// truncated or overflows 64 bits, or when pos is negative already (an
// earlier field failed).
func flatUvarintLong(b []byte, pos int) (uint64, int) {
	if pos < 0 {
		return 0, -1
	}
	var x uint64
	for i, s := 0, uint(0); pos+i < len(b) && i < binary.MaxVarintLen64; i, s = i+1, s+7 {
		c := b[pos+i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -1
			}
			return x | uint64(c)<<s, pos + i + 1
		}
		x |= uint64(c&0x7f) << s
	}
	return 0, -1
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
