package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
)

var lenient = Rules{MaxUncompressed: 64 << 20, BeforeMaxMs: math.MaxInt64, AfterMaxMs: math.MaxInt64}

// rawRecord encodes one record field by field, so that tests can make any
// field lie; lengths and counts are written as given.
type rawRecord struct {
	lengthDelta int // added to the true body length
	offsetDelta int64
	tsDelta     int64
	keyLen      int64 // -1 null; the key bytes are key
	key         []byte
	valueLen    int64
	value       []byte
	headerCount int64
	headers     []byte // encoded headers, as many as the test wants
}

func (r rawRecord) encode() []byte {
	var body []byte
	body = append(body, 0)
	body = binary.AppendVarint(body, r.tsDelta)
	body = binary.AppendVarint(body, r.offsetDelta)
	body = binary.AppendVarint(body, r.keyLen)
	body = append(body, r.key...)
	body = binary.AppendVarint(body, r.valueLen)
	body = append(body, r.value...)
	body = binary.AppendVarint(body, r.headerCount)
	body = append(body, r.headers...)
	out := binary.AppendVarint(nil, int64(len(body)+r.lengthDelta))
	return append(out, body...)
}

func goodRaw(i int) rawRecord {
	return rawRecord{offsetDelta: int64(i), keyLen: 1, key: []byte{'k'}, valueLen: 2, value: []byte("vv")}
}

func TestValidateAcceptsWellFormed(t *testing.T) {
	big := []kmsg.Record{{Key: []byte("k"), Value: bytes.Repeat([]byte("0123456789"), 20_000)}, {OffsetDelta: 1, Value: []byte("x")}}
	for _, c := range allCodecs {
		for _, recs := range [][]kmsg.Record{sampleRecords(), big} {
			b := batchSpec{codec: c.codec, baseTimestamp: 1000, maxTimestamp: 7, records: recs}.build(t)
			got, err := Validate(b, lenient)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			var want int64 = -1
			for _, r := range recs {
				want = max(want, 1000+r.TimestampDelta64)
			}
			if got.MaxTimestamp != want || got.RefusedRecords != 0 {
				t.Fatalf("%s: max timestamp %d (want %d), %d refused", c.name, got.MaxTimestamp, want, got.RefusedRecords)
			}
			// A compacted topic names the keyless record, and only it.
			keyed := lenient
			keyed.RequireKeys = true
			got, err = Validate(b, keyed)
			if err != nil || got.RefusedRecords != 1 || got.RecordErrors[0].Index != 1 || got.BadTimestamps {
				t.Fatalf("%s: keys: %+v, %v", c.name, got, err)
			}
		}
	}
}

func TestValidateRefusesLyingBatches(t *testing.T) {
	one := goodRaw(0).encode()
	hdrLie := goodRaw(0)
	hdrLie.headerCount = 1 << 30
	keyLie := goodRaw(0)
	keyLie.keyLen = 1000
	nullHdrKey := goodRaw(0)
	nullHdrKey.headerCount, nullHdrKey.headers = 1, []byte{1, 1} // key -1
	short := goodRaw(0)
	short.lengthDelta = -1
	long := goodRaw(0)
	long.lengthDelta = 3
	cases := []struct {
		name   string
		count  int32
		lod    int32
		raw    []byte
		reason string
	}{
		{"count 2^31-1 holding one record", math.MaxInt32, math.MaxInt32 - 1, one, "records end early"},
		{"2^30 headers", 1, 0, hdrLie.encode(), "header count 1073741824"},
		{"key longer than the record", 1, 0, keyLie.encode(), "key: records corrupt: length 1000"},
		{"null header key", 1, 0, nullHdrKey.encode(), "null key"},
		{"record length too short", 1, 0, short.encode(), "records corrupt"},
		{"record length too long", 1, 0, append(long.encode(), 0, 0, 0), "record of"},
		{"two records counted as three", 3, 2, append(goodRaw(0).encode(), goodRaw(1).encode()...), "records end early"},
		{"bytes after the last record", 1, 0, append(goodRaw(0).encode(), 0), "bytes after the last"},
		{"offset deltas out of order", 2, 1, append(goodRaw(1).encode(), goodRaw(0).encode()...), "offset delta 1, want 0"},
		{"offset delta skips", 2, 1, append(goodRaw(0).encode(), goodRaw(2).encode()...), "offset delta 2, want 1"},
		{"varint past the section", 1, 0, []byte{0x80}, "records end early"},
	}
	for _, c := range allCodecs {
		for _, tc := range cases {
			b := batchSpec{codec: c.codec, recordCount: tc.count, lastOffsetDelta: tc.lod, rawRecords: tc.raw}.build(t)
			_, err := Validate(b, lenient)
			if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrCodec) || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("%s/%s: %v, want ErrCorrupt (%q)", c.name, tc.name, err, tc.reason)
			}
		}
	}
}

func TestValidateDecompressionBounded(t *testing.T) {
	var raw []byte
	for i := range 4000 {
		r := goodRaw(i)
		r.valueLen, r.value = 1000, make([]byte, 1000)
		raw = append(raw, r.encode()...)
	}
	limited := lenient
	limited.MaxUncompressed = 1 << 20
	for _, c := range allCodecs[1:] {
		b := batchSpec{codec: c.codec, rawRecords: raw, recordCount: 4000}.build(t)
		if _, err := Validate(b, limited); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: %v, want ErrTooLarge", c.name, err)
		}
		if _, err := Validate(b, lenient); err != nil {
			t.Errorf("%s within the limit: %v", c.name, err)
		}
	}
	garbage := batchSpec{codec: batch.CompressionZstd, rawRecords: []byte("not zstd at all"), recordCount: 1, precompressed: true}.build(t)
	if _, err := Validate(garbage, lenient); !errors.Is(err, ErrCodec) {
		t.Errorf("garbage zstd: %v, want ErrCodec", err)
	}
}

func TestValidateTimestamps(t *testing.T) {
	recs := []kmsg.Record{{Key: []byte("a")}, {OffsetDelta: 1, TimestampDelta64: 5000, Key: []byte("b")}, {OffsetDelta: 2, TimestampDelta64: -5000, Key: []byte("c")}}
	b := batchSpec{baseTimestamp: 100_000, maxTimestamp: 105_000, records: recs}.build(t)
	rules := lenient
	rules.CreateTime, rules.NowMs, rules.BeforeMaxMs, rules.AfterMaxMs = true, 100_000, 1000, 1000
	got, err := Validate(b, rules)
	if err != nil {
		t.Fatal(err)
	}
	if !got.BadTimestamps || got.RefusedRecords != 2 || got.RecordErrors[0].Index != 1 || got.RecordErrors[1].Index != 2 ||
		!strings.Contains(got.RecordErrors[0].Message, "[99000, 101000]") {
		t.Fatalf("%+v", got)
	}
	rules.CreateTime = false // LogAppendTime topics ignore producer times
	if got, err := Validate(b, rules); err != nil || got.RefusedRecords != 0 {
		t.Fatalf("LogAppendTime topic: %+v %v", got, err)
	}
	lat := batchSpec{attributes: batch.TimestampTypeBit, baseTimestamp: 1, maxTimestamp: 2, records: recs}.build(t)
	if got, _ := Validate(lat, rules); !got.BadTimestamps || got.RefusedRecords != 3 {
		t.Fatalf("producer-set LogAppendTime: %+v", got)
	}
}

func TestValidateCapsRecordErrors(t *testing.T) {
	var raw []byte
	n := MaxRecordErrors + 5
	for i := range n {
		r := goodRaw(i)
		r.keyLen, r.key = -1, nil
		raw = append(raw, r.encode()...)
	}
	b := batchSpec{rawRecords: raw, recordCount: int32(n)}.build(t)
	rules := lenient
	rules.RequireKeys = true
	got, err := Validate(b, rules)
	if err != nil || got.RefusedRecords != n || len(got.RecordErrors) != MaxRecordErrors {
		t.Fatalf("%d refused, %d named, %v", got.RefusedRecords, len(got.RecordErrors), err)
	}
}

func TestValidateRefusesProducerWithoutSequence(t *testing.T) {
	b := batchSpec{records: sampleRecords()}.build(t)
	binary.BigEndian.PutUint64(b[43:], 7) // producer id 7, base sequence still -1
	b = fixLengthAndCRC(b)
	if _, err := Validate(b, lenient); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "sequence number -1") {
		t.Fatalf("%v, want a refused sequence", err)
	}
}

// TestValidateFlatAgrees: well-formed batches of many records (keys,
// values, headers) get the same answer from validateFlat as from the walk
// through readRecord, under each rule.
func TestValidateFlatAgrees(t *testing.T) {
	for _, size := range []int{100, 1024} {
		recs := benchRecords(size, 256<<10)
		for i := range recs {
			if i%3 == 0 {
				recs[i].Headers = append(recs[i].Headers, kmsg.Header{Key: "h", Value: []byte("v")}, kmsg.Header{Key: "n"})
			}
			if i%7 == 0 {
				recs[i].Key = nil
			}
			recs[i].TimestampDelta64 = int64(i % 11)
		}
		b := batchSpec{baseTimestamp: 1_700_000_000_000, records: recs}.build(t)
		keys, window := lenient, lenient
		keys.RequireKeys = true
		window.CreateTime, window.NowMs, window.BeforeMaxMs, window.AfterMaxMs = true, 1_700_000_000_005, 2, 2
		for _, rules := range []Rules{lenient, keys, window} {
			got, err := Validate(b, rules)
			checkSlowWalkAgrees(t, b, rules, got, err)
		}
	}
}

// TestValidateFlatVarintEncodings: validateFlat decodes varints itself, so
// each field of a record, encoded every way a varint can be (padded with
// continuation bytes, the longest a varint may be, one byte too long,
// overflowing 64 bits, cut off by the end of the records), must get the
// same answer as the walk through readRecord: accepted when the value
// decodes and fits, refused with the same error otherwise.
func TestValidateFlatVarintEncodings(t *testing.T) {
	padded := func(n int) func(int64) []byte {
		return func(v int64) []byte {
			u := uint64(v<<1) ^ uint64(v>>63)
			out := make([]byte, n)
			for i := range n - 1 {
				out[i] = byte(u&0x7f) | 0x80
				u >>= 7
			}
			out[n-1] = byte(u)
			return out
		}
	}
	encodings := []struct {
		name   string
		encode func(int64) []byte
		valid  bool
	}{
		{"canonical", func(v int64) []byte { return binary.AppendVarint(nil, v) }, true},
		{"2 bytes", padded(2), true},
		{"3 bytes", padded(3), true},
		{"10 bytes", padded(10), true},
		{"11 bytes", padded(11), false},
		{"overflowing 64 bits", func(v int64) []byte { b := padded(10)(v); b[9] = 2; return b }, false},
	}
	// fields: length, timestamp delta, offset delta, key length, value
	// length, header count, header key length, header value length.
	const fields = 8
	record := func(i int, enc func(int) func(int64) []byte) []byte {
		body := []byte{0}
		body = append(body, enc(1)(3)...)
		body = append(body, enc(2)(int64(i))...)
		body = append(append(body, enc(3)(1)...), 'k')
		body = append(append(body, enc(4)(2)...), "vv"...)
		body = append(body, enc(5)(1)...)
		body = append(append(body, enc(6)(1)...), 'h')
		body = append(append(body, enc(7)(1)...), 'v')
		return append(enc(0)(int64(len(body))), body...)
	}
	canonical := func(int) func(int64) []byte { return encodings[0].encode }
	check := func(name string, raw []byte, count int32, valid bool) {
		t.Helper()
		b := batchSpec{baseTimestamp: 1000, recordCount: count, lastOffsetDelta: count - 1, rawRecords: raw}.build(t)
		for _, rules := range []Rules{lenient, {MaxUncompressed: 64 << 20, CreateTime: true, NowMs: 1003, BeforeMaxMs: 1, AfterMaxMs: 1}} {
			got, err := Validate(b, rules)
			if (err == nil) != valid || (valid && got.MaxTimestamp != 1003) {
				t.Errorf("%s: %+v, %v; want valid=%v", name, got, err, valid)
			}
			checkSlowWalkAgrees(t, b, rules, got, err)
		}
	}
	for _, e := range encodings {
		for f := range fields {
			enc := func(g int) func(int64) []byte {
				if g == f {
					return e.encode
				}
				return encodings[0].encode
			}
			// The second record carries the odd field, after a plain one.
			raw := append(record(0, canonical), record(1, enc)...)
			check(fmt.Sprintf("%s field %d", e.name, f), raw, 2, e.valid)
		}
	}
	// No records at all where the batch counts one.
	check("no records", nil, 1, false)
	// Varints cut off by the end of the records, after a plain record.
	for _, tail := range [][]byte{{0x80}, {0xff, 0xff}, {0x80, 0x80, 0x80}, bytes.Repeat([]byte{0xff}, 12)} {
		check(fmt.Sprintf("cut off %x", tail), append(record(0, canonical), tail...), 2, false)
	}
	// A record cut off inside each of its fields.
	whole := record(1, canonical)
	for n := 1; n < len(whole); n++ {
		check(fmt.Sprintf("second record cut at %d", n), append(record(0, canonical), whole[:n]...), 2, false)
	}
}
