package records

import (
	"encoding/binary"
	"fmt"
	"io"
	"reflect"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/skein-log/skein/internal/batch"
)

// checkSlowWalkAgrees checks that Validate answers b the same with
// validateFlat turned off (every record through readRecord).
func checkSlowWalkAgrees(t *testing.T, b []byte, rules Rules, got Checked, err error) {
	t.Helper()
	flatWalk = false
	defer func() { flatWalk = true }()
	slow, slowErr := Validate(b, rules)
	if fmt.Sprint(err) != fmt.Sprint(slowErr) || !reflect.DeepEqual(got, slow) {
		t.Fatalf("Validate: %+v, %v; with every record through readRecord: %+v, %v\nbatch %x", got, err, slow, slowErr, b)
	}
	// And with a narrow timestamp window, which refuses some records.
	if !rules.CreateTime {
		narrow := rules
		narrow.RequireKeys, narrow.CreateTime, narrow.BeforeMaxMs, narrow.AfterMaxMs = false, true, 3, 3
		flatWalk = true
		got, err := Validate(b, narrow)
		checkSlowWalkAgrees(t, b, narrow, got, err)
	}
}

// FuzzValidateLyingBatches builds batches from the fuzzer's bytes with a
// correct CRC and length but records whose lengths, counts and deltas may
// lie, compressed with any codec, and checks that Validate refuses exactly
// the batches that refDecode, a plain decoder of the format written here
// from the specification, finds malformed, and names the same keyless
// records.
func FuzzValidateLyingBatches(f *testing.F) {
	f.Add([]byte{0, 3, 3, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 1, 9, 7, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{4, 2, 1, 0, 200, 0, 0, 0, 0, 3})
	f.Add([]byte{3, 5, 5, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 6})
	f.Fuzz(func(t *testing.T, seed []byte) {
		g := gen{b: seed}
		codec := []int{batch.CompressionNone, batch.CompressionGzip, codecSnappyRaw, batch.CompressionLZ4, batch.CompressionZstd}[g.next()%5]
		n := int(g.next() % 6)
		count := int32(n)
		if g.next()%4 == 0 {
			count = int32(g.next()%8) + 1 // lies, or happens to agree
		}
		var raw []byte
		for i := range n {
			raw = append(raw, g.record(i)...)
		}
		if g.next()%8 == 0 {
			raw = append(raw, g.next())
		}
		b := batchSpec{codec: codec, recordCount: count, rawRecords: raw}.build(t)
		rules := lenient
		rules.RequireKeys = true
		got, err := Validate(b, rules)
		checkSlowWalkAgrees(t, b, rules, got, err)
		keyless, ok := refDecode(t, b)
		if (err == nil) != ok {
			t.Fatalf("Validate: %v; reference decoder says well formed: %v\nbatch %x", err, ok, b)
		}
		if !ok {
			return
		}
		if len(got.RecordErrors) != len(keyless) {
			t.Fatalf("Validate named %d keyless records, reference %v", len(got.RecordErrors), keyless)
		}
		for i, e := range got.RecordErrors {
			if int(e.Index) != keyless[i] {
				t.Fatalf("Validate named record %d, reference %d", e.Index, keyless[i])
			}
		}
	})
}

// gen turns fuzzer bytes into choices; past the end it answers zero.
type gen struct{ b []byte }

func (g *gen) next() byte {
	if len(g.b) == 0 {
		return 0
	}
	v := g.b[0]
	g.b = g.b[1:]
	return v
}

// lie returns a length: mostly the true one, sometimes another one,
// including huge and negative values.
func (g *gen) lie(truth int64) int64 {
	switch c := g.next(); {
	case c < 200:
		return truth
	case c < 220:
		return truth + int64(int8(g.next()))
	case c < 235:
		return -int64(g.next() % 3)
	case c < 250:
		return 1 << (20 + g.next()%40)
	default:
		return -1 << 40
	}
}

func (g *gen) record(i int) []byte {
	var body []byte
	body = append(body, g.next()%2)
	body = binary.AppendVarint(body, int64(int8(g.next())))
	body = binary.AppendVarint(body, g.lie(int64(i)))
	for range 2 { // key, then value
		if g.next()%5 == 0 {
			body = binary.AppendVarint(body, g.lie(-1))
			continue
		}
		v := make([]byte, g.next()%9)
		body = binary.AppendVarint(body, g.lie(int64(len(v))))
		body = append(body, v...)
	}
	nh := int(g.next() % 3)
	body = binary.AppendVarint(body, g.lie(int64(nh)))
	for range nh {
		k := make([]byte, g.next()%4)
		body = binary.AppendVarint(body, g.lie(int64(len(k))))
		body = append(body, k...)
		body = binary.AppendVarint(body, g.lie(-1))
	}
	return append(binary.AppendVarint(nil, g.lie(int64(len(body)))), body...)
}

// refDecode decompresses the whole records section and reads it field by
// field as the Kafka protocol guide describes the v2 record: it reports
// whether the batch is well formed and which records have no key.
func refDecode(t *testing.T, b []byte) (keyless []int, ok bool) {
	h, err := batch.Validate(b)
	if err != nil {
		return nil, false
	}
	data := b[batch.HeaderSize:]
	var r io.Reader
	switch h.Compression() {
	case batch.CompressionGzip:
		zr, err := gzip.NewReader(bytesReader(data))
		if err != nil {
			return nil, false
		}
		r = zr
	case batch.CompressionLZ4:
		r = lz4.NewReader(bytesReader(data))
	case batch.CompressionZstd:
		zr, err := zstd.NewReader(bytesReader(data), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, false
		}
		defer zr.Close()
		r = zr
	case batch.CompressionSnappy:
		if data, err = decompress(batch.CompressionSnappy, data, 1<<30); err != nil {
			return nil, false
		}
	}
	if r != nil {
		if data, err = io.ReadAll(r); err != nil {
			return nil, false
		}
	}
	p := 0
	varint := func(lo, hi int64) (int64, bool) {
		v, n := binary.Varint(data[p:])
		if n <= 0 || v < lo || v > hi {
			return 0, false
		}
		p += n
		return v, true
	}
	i32 := func() (int64, bool) { return varint(-1<<31, 1<<31-1) }
	for i := range int64(h.RecordCount) {
		length, ok := i32()
		if !ok || length < 0 || int64(len(data)-p) < length {
			return nil, false
		}
		end := p + int(length)
		whole := data
		data = data[:end] // a field may not run past its record
		fieldOK := func() (null bool, ok bool) {
			n, ok := i32()
			if !ok || n < -1 || int64(len(data)-p) < n {
				return false, false
			}
			if n == -1 {
				return true, true
			}
			p += int(n)
			return false, true
		}
		if p >= len(data) {
			return nil, false
		}
		p++ // attributes
		if _, ok := varint(-1<<63, 1<<63-1); !ok {
			return nil, false
		}
		if d, ok := i32(); !ok || d != i {
			return nil, false
		}
		keyNull, ok := fieldOK()
		if !ok {
			return nil, false
		}
		if _, ok := fieldOK(); !ok {
			return nil, false
		}
		nh, ok := i32()
		if !ok || nh < 0 {
			return nil, false
		}
		for range nh {
			if null, ok := fieldOK(); !ok || null {
				return nil, false
			}
			if _, ok := fieldOK(); !ok {
				return nil, false
			}
		}
		if p != end {
			return nil, false
		}
		data = whole
		if keyNull {
			keyless = append(keyless, int(i))
		}
	}
	return keyless, p == len(data)
}

func bytesReader(b []byte) io.Reader { return &sliceReader{b} }

type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}
