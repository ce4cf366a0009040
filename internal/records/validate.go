package records

import (
	"bytes"
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
