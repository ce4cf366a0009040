package records

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
)

const testLimit = 1 << 20

var allCodecs = []struct {
	name  string
	codec int
}{
	{"none", batch.CompressionNone},
	{"gzip", batch.CompressionGzip},
	{"snappy-raw", codecSnappyRaw},
	{"snappy-xerial", codecSnappyXerial},
	{"lz4", batch.CompressionLZ4},
	{"zstd", batch.CompressionZstd},
}

func checkRecords(t *testing.T, got []Record, want []kmsg.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.OffsetDelta != w.OffsetDelta || g.TimestampDelta != w.TimestampDelta64 {
			t.Fatalf("record %d: deltas %d/%d, want %d/%d", i, g.OffsetDelta, g.TimestampDelta, w.OffsetDelta, w.TimestampDelta64)
		}
		if !sameNullable(g.Key, w.Key) || !sameNullable(g.Value, w.Value) {
			t.Fatalf("record %d: key %q value len %d, want key %q value len %d", i, g.Key, len(g.Value), w.Key, len(w.Value))
		}
		if len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: %d headers, want %d", i, len(g.Headers), len(w.Headers))
		}
		for j, wh := range w.Headers {
			if g.Headers[j].Key != wh.Key || !sameNullable(g.Headers[j].Value, wh.Value) {
				t.Fatalf("record %d header %d: %+v, want %+v", i, j, g.Headers[j], wh)
			}
		}
	}
}

// sameNullable compares bytes and also null-ness.
func sameNullable(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

func TestDecodeEachCodec(t *testing.T) {
	// A large batch: xerial splits input into 32 KiB chunks, so this
	// exercises multi-chunk framing too.
	var big []kmsg.Record
	for i := range 200 {
		big = append(big, kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: int64(i),
			Key: fmt.Appendf(nil, "key-%d", i), Value: bytes.Repeat([]byte{byte(i)}, 500)})
	}
	for _, c := range allCodecs {
		for _, set := range []struct {
			name string
			recs []kmsg.Record
		}{{"sample", sampleRecords()}, {"big", big}} {
			t.Run(c.name+"/"+set.name, func(t *testing.T) {
				b := batchSpec{codec: c.codec, baseOffset: 42, baseTimestamp: 1000, records: set.recs}.build(t)
				h, got, err := Decode(b, testLimit)
				if err != nil {
					t.Fatal(err)
				}
				if h.BaseOffset != 42 || int(h.RecordCount) != len(set.recs) {
					t.Fatalf("header %+v", h)
				}
				checkRecords(t, got, set.recs)
			})
		}
	}
}

func TestDecompressedSizeLimit(t *testing.T) {
	recs := []kmsg.Record{{Value: bytes.Repeat([]byte("z"), 10_000)}}
	rawSize := len(encodeRecords(recs))
	for _, c := range allCodecs[1:] {
		t.Run(c.name, func(t *testing.T) {
			b := batchSpec{codec: c.codec, records: recs}.build(t)
			if _, _, err := Decode(b, rawSize); err != nil {
				t.Fatalf("limit equal to the size: %v", err)
			}
			if _, _, err := Decode(b, rawSize-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("limit one below the size: %v, want ErrTooLarge", err)
			}
			if _, _, err := Decode(b, 0); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("zero limit: %v, want ErrTooLarge", err)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	two := []kmsg.Record{{OffsetDelta: 0, Value: []byte("a")}, {OffsetDelta: 1, Value: []byte("b")}}
	three := append(append([]kmsg.Record{}, two...), kmsg.Record{OffsetDelta: 2})
	rec := func(r kmsg.Record) []byte { return encodeRecords([]kmsg.Record{r}) }
	// a record whose length field claims one byte more than its body has
	overlong := rec(kmsg.Record{Value: []byte("v")})
	overlong[0] += 2 // zigzag: +1 in value

	tests := []struct {
		name    string
		spec    batchSpec
		mangle  func([]byte) []byte
		wantErr error
	}{
		{"fewer records than the count", batchSpec{records: two, recordCount: 3}, nil, ErrCorrupt},
		{"more records than the count", batchSpec{records: three, recordCount: 2}, nil, ErrCorrupt},
		{"offset deltas not increasing", batchSpec{records: []kmsg.Record{{OffsetDelta: 1}, {OffsetDelta: 1}}, lastOffsetDelta: 1}, nil, ErrCorrupt},
		{"offset delta past the last", batchSpec{records: []kmsg.Record{{OffsetDelta: 0}, {OffsetDelta: 2}}}, nil, ErrCorrupt},
		{"record length past the end", batchSpec{rawRecords: overlong, recordCount: 1}, nil, ErrCorrupt},
		{"truncated varint", batchSpec{rawRecords: []byte{0x80}, recordCount: 1}, nil, ErrCorrupt},
		{"negative record length", batchSpec{rawRecords: []byte{0x03}, recordCount: 1}, nil, ErrCorrupt},
		{"trailing garbage inside a record", batchSpec{rawRecords: []byte{0x10, 0, 0, 0, 1, 1, 0, 0, 0}, recordCount: 1}, nil, ErrCorrupt},
		{"header count beyond the bytes", batchSpec{rawRecords: []byte{0x0c, 0, 0, 0, 1, 1, 0x7e}, recordCount: 1}, nil, ErrCorrupt},
		{"negative header count", batchSpec{rawRecords: []byte{0x0c, 0, 0, 0, 1, 1, 0x01}, recordCount: 1}, nil, ErrCorrupt},
		{"null header key", batchSpec{rawRecords: []byte{0x10, 0, 0, 0, 1, 1, 0x02, 0x01, 0x01}, recordCount: 1}, nil, ErrCorrupt},
		{"varint overflowing int32", batchSpec{rawRecords: []byte{0xff, 0xff, 0xff, 0xff, 0x7f}, recordCount: 1}, nil, ErrCorrupt},
		{"garbage gzip", batchSpec{codec: batch.CompressionGzip, rawRecords: []byte("not gzip"), recordCount: 1, precompressed: true}, nil, ErrCorrupt},
		{"garbage lz4", batchSpec{codec: batch.CompressionLZ4, rawRecords: []byte("not lz4 at all"), recordCount: 1, precompressed: true}, nil, ErrCorrupt},
		{"garbage zstd", batchSpec{codec: batch.CompressionZstd, rawRecords: []byte("not zstd"), recordCount: 1, precompressed: true}, nil, ErrCorrupt},
		{"garbage snappy", batchSpec{codec: batch.CompressionSnappy, rawRecords: []byte{0x05, 0x0a, 'a'}, recordCount: 1, precompressed: true}, nil, ErrCorrupt},
		{"snappy block announcing 4 GiB", batchSpec{codec: batch.CompressionSnappy, rawRecords: []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 1}, recordCount: 1, precompressed: true}, nil, ErrTooLarge},
		{"xerial header only", batchSpec{codec: batch.CompressionSnappy, rawRecords: []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0}, recordCount: 1, precompressed: true}, nil, ErrCorrupt},
		{"xerial chunk past the end", batchSpec{codec: batch.CompressionSnappy, rawRecords: append(append([]byte{}, xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 5), recordCount: 1, precompressed: true}, nil, ErrCorrupt},
		{"bad CRC", batchSpec{records: two}, func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, batch.ErrBadCRC},
		{"unknown codec", batchSpec{records: two}, func(b []byte) []byte { b[22] |= 7; return fixLengthAndCRC(b) }, batch.ErrBadCompression},
		{"truncated batch", batchSpec{records: two}, func(b []byte) []byte { return b[:len(b)-1] }, batch.ErrBadLength},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.spec.build(t)
			if tc.mangle != nil {
				b = tc.mangle(b)
			}
			_, recs, err := Decode(b, testLimit)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Decode = %d records, %v; want %v", len(recs), err, tc.wantErr)
			}
		})
	}
}

func TestTimestampsAndFirstAtOrAfter(t *testing.T) {
	recs := []kmsg.Record{
		{OffsetDelta: 0, TimestampDelta64: 0},
		{OffsetDelta: 1, TimestampDelta64: 20},
		{OffsetDelta: 2, TimestampDelta64: 10}, // timestamps need not be monotonic
		{OffsetDelta: 3, TimestampDelta64: 30},
	}
	create := batchSpec{baseOffset: 100, baseTimestamp: 1000, maxTimestamp: 1030, records: recs}.build(t)
	logAppend := batchSpec{baseOffset: 100, baseTimestamp: 1000, maxTimestamp: 5000,
		attributes: batch.TimestampTypeBit, records: recs}.build(t)

	tests := []struct {
		name       string
		b          []byte
		ts         int64
		wantOffset int64 // -1: none
		wantTs     int64
	}{
		{"before all", create, 0, 100, 1000},
		{"exact first", create, 1000, 100, 1000},
		{"between", create, 1005, 101, 1020},
		{"first in offset order, not smallest timestamp", create, 1010, 101, 1020},
		{"last", create, 1021, 103, 1030},
		{"after all", create, 1031, -1, 0},
		{"log append time applies to all", logAppend, 4000, 100, 5000},
		{"log append time after", logAppend, 5001, -1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, off, rts, found, err := FirstAtOrAfter(tc.b, tc.ts, testLimit)
			if err != nil {
				t.Fatal(err)
			}
			if !found {
				if tc.wantOffset != -1 {
					t.Fatalf("no record at or after %d, want offset %d", tc.ts, tc.wantOffset)
				}
				return
			}
			if off != tc.wantOffset || rts != tc.wantTs {
				t.Fatalf("got offset %d ts %d, want %d %d", off, rts, tc.wantOffset, tc.wantTs)
			}
		})
	}
}

func TestControlBatchDecodes(t *testing.T) {
	// A commit marker: key = version 0, type 1; value = version 0, coordinator epoch 0.
	marker := []kmsg.Record{{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 0}}}
	b := batchSpec{attributes: batch.ControlBit | batch.TransactionalBit, records: marker}.build(t)
	h, got, err := Decode(b, testLimit)
	if err != nil || !h.IsControl() {
		t.Fatalf("control batch: %v, control=%v", err, h.IsControl())
	}
	checkRecords(t, got, marker)
}

func TestUncompressedRecordsAliasInput(t *testing.T) {
	b := batchSpec{records: []kmsg.Record{{Value: []byte("abc")}}}.build(t)
	_, got, err := Decode(b, testLimit)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, got[0].Value) || cap(got[0].Value) != len(got[0].Value) {
		t.Fatal("value should be a capacity-limited view into the batch")
	}
}

func TestDecodeStartsNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, c := range allCodecs {
		b := batchSpec{codec: c.codec, records: sampleRecords()}.build(t)
		for range 20 {
			if _, _, err := Decode(b, testLimit); err != nil {
				t.Fatal(err)
			}
		}
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("goroutines grew from %d to %d", before, after)
	}
}

// A timestamp lookup in a compressed stored batch finds the same record as
// in the plain one, and holds a fixed amount of memory: a batch of many
// small records is read through the window, not decoded into a slice of
// records (which for this batch would be over 10 MiB).
func TestFirstAtOrAfterCompressedKeepsMemoryFlat(t *testing.T) {
	const n = 200_000
	recs := make([]kmsg.Record, n)
	for i := range recs {
		recs[i] = kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: int64(i), Value: []byte("v")}
	}
	for _, codec := range []int{batch.CompressionNone, batch.CompressionGzip, batch.CompressionLZ4, batch.CompressionZstd} {
		b := batchSpec{codec: codec, baseOffset: 10, baseTimestamp: 1000, maxTimestamp: 1000 + n - 1, records: recs}.build(t)
		_, off, rts, found, err := FirstAtOrAfter(b, 1000+n-2, 64<<20)
		if err != nil || !found || off != 10+n-2 || rts != 1000+n-2 {
			t.Fatalf("codec %d: got offset %d ts %d found %v err %v, want %d", codec, off, rts, found, err, 10+n-2)
		}
		// The least of a few lookups: a collection between two may empty
		// the decompressor pools, and refilling them is not the lookup's.
		least := uint64(1 << 62)
		for range 5 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if _, _, _, _, err := FirstAtOrAfter(b, 1000+n, 64<<20); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			least = min(least, after.TotalAlloc-before.TotalAlloc)
		}
		if grew := least; grew > 1<<20 {
			t.Fatalf("codec %d: a lookup through %d records allocated %d bytes, want under 1 MiB", codec, n, grew)
		}
	}
}
