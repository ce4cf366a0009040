package records

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
)

// Test-only codec ids for the two snappy framings; both are stored as
// batch.CompressionSnappy.
const (
	codecSnappyRaw    = 100
	codecSnappyXerial = 101
)

func storedCodec(codec int) int16 {
	if codec == codecSnappyRaw || codec == codecSnappyXerial {
		return batch.CompressionSnappy
	}
	return int16(codec)
}

// encodeRecords encodes records with kmsg, filling in each length field.
func encodeRecords(recs []kmsg.Record) []byte {
	var out []byte
	for _, r := range recs {
		r.Length = 0
		body := r.AppendTo(nil)[1:] // a zero length is one varint byte
		r.Length = int32(len(body))
		out = r.AppendTo(out)
	}
	return out
}

func compress(t testing.TB, codec int, raw []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch codec {
	case batch.CompressionNone:
		return raw
	case batch.CompressionGzip:
		w := gzip.NewWriter(&buf)
		mustWrite(t, w.Write, raw)
		mustClose(t, w.Close)
	case codecSnappyRaw:
		return snappy.Encode(nil, raw)
	case codecSnappyXerial:
		return xerial.Encode(nil, raw)
	case batch.CompressionLZ4:
		w := lz4.NewWriter(&buf)
		mustWrite(t, w.Write, raw)
		mustClose(t, w.Close)
	case batch.CompressionZstd:
		w, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		return w.EncodeAll(raw, nil)
	default:
		t.Fatalf("unknown test codec %d", codec)
	}
	return buf.Bytes()
}

func mustWrite(t testing.TB, write func([]byte) (int, error), b []byte) {
	t.Helper()
	if _, err := write(b); err != nil {
		t.Fatal(err)
	}
}

func mustClose(t testing.TB, close func() error) {
	t.Helper()
	if err := close(); err != nil {
		t.Fatal(err)
	}
}

// batchSpec describes a test batch; the zero value of a field is a sane
// default.
type batchSpec struct {
	codec           int
	attributes      int16 // extra attribute bits
	baseOffset      int64
	baseTimestamp   int64
	maxTimestamp    int64
	recordCount     int32 // defaults to len(records)
	lastOffsetDelta int32 // defaults to recordCount-1
	records         []kmsg.Record
	rawRecords      []byte // used instead of records when non-nil
	// precompressed stores rawRecords as the records section unchanged,
	// so that garbage reaches the decompressor.
	precompressed bool
}

// build returns the batch bytes with a correct length and CRC.
func (s batchSpec) build(t testing.TB) []byte {
	t.Helper()
	raw := s.rawRecords
	if raw == nil {
		raw = encodeRecords(s.records)
	}
	count := s.recordCount
	if count == 0 {
		count = int32(len(s.records))
	}
	lod := s.lastOffsetDelta
	if lod == 0 {
		lod = count - 1
	}
	rb := kmsg.RecordBatch{
		FirstOffset:     s.baseOffset,
		Magic:           2,
		Attributes:      storedCodec(s.codec) | s.attributes,
		LastOffsetDelta: lod,
		FirstTimestamp:  s.baseTimestamp,
		MaxTimestamp:    s.maxTimestamp,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      count,
		Records:         raw,
	}
	if !s.precompressed {
		rb.Records = compress(t, s.codec, raw)
	}
	b := rb.AppendTo(nil)
	return fixLengthAndCRC(b)
}

// fixLengthAndCRC makes b's header agree with its size and content.
func fixLengthAndCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-batch.LogOverhead))
	binary.BigEndian.PutUint32(b[17:], batch.CRC(b))
	return b
}

// sampleRecords covers null and empty keys and values, headers with null
// and empty values, and negative and large timestamp deltas.
func sampleRecords() []kmsg.Record {
	return []kmsg.Record{
		{OffsetDelta: 0, TimestampDelta64: 0, Key: []byte("k0"), Value: []byte("v0")},
		{OffsetDelta: 1, TimestampDelta64: 5, Key: nil, Value: []byte("no key")},
		{OffsetDelta: 2, TimestampDelta64: -3, Key: []byte{}, Value: nil},
		{OffsetDelta: 3, TimestampDelta64: 1 << 40, Key: []byte("k3"), Value: bytes.Repeat([]byte("x"), 3000),
			Headers: []kmsg.Header{{Key: "h1", Value: []byte("a")}, {Key: "", Value: nil}, {Key: "h3", Value: []byte{}}}},
	}
}
