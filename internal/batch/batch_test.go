package batch

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// build encodes h followed by body, with batchLength and CRC computed.
func build(h Header, body []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(body))
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(h.LeaderEpoch))
	b[offMagic] = byte(h.Magic)
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(h.Attributes))
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(h.BaseTimestamp))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(h.RecordCount))
	b = append(b, body...)
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-LogOverhead))
	binary.BigEndian.PutUint32(b[offCRC:], CRC(b))
	return b
}

// sample is a plausible idempotent batch of 3 records.
func sample() Header {
	return Header{
		BaseOffset: 1234, LeaderEpoch: 7, Magic: 2, Attributes: CompressionLZ4 | TimestampTypeBit,
		LastOffsetDelta: 2, BaseTimestamp: 1_700_000_000_000, MaxTimestamp: 1_700_000_000_009,
		ProducerID: 99, ProducerEpoch: 3, BaseSequence: 40, RecordCount: 3,
	}
}

func TestParseHeaderRoundTrip(t *testing.T) {
	want := sample()
	b := build(want, []byte("records"))
	want.BatchLength = int32(len(b) - LogOverhead)
	want.CRC = CRC(b)
	got, err := ParseHeader(append(b, "next batch"...)) // more after the batch is fine
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("ParseHeader = %+v\nwant %+v", got, want)
	}
	if got.Size() != len(b) || got.LastOffset() != 1236 || got.Compression() != CompressionLZ4 {
		t.Fatalf("Size %d LastOffset %d Compression %d", got.Size(), got.LastOffset(), got.Compression())
	}
	if !got.HasProducerID() || got.IsTransactional() || got.IsControl() {
		t.Fatal("attribute helpers wrong")
	}
}

func TestParseHeaderErrors(t *testing.T) {
	good := build(sample(), nil)
	tests := []struct {
		name    string
		b       []byte
		wantErr error
	}{
		{"empty", nil, ErrTruncated},
		{"one byte short", good[:HeaderSize-1], ErrTruncated},
		{"magic 1", with(good, func(b []byte) { b[offMagic] = 1 }), ErrBadMagic},
		{"length below header", with(good, func(b []byte) { binary.BigEndian.PutUint32(b[offBatchLength:], HeaderSize-LogOverhead-1) }), ErrBadLength},
		{"negative length", with(good, func(b []byte) { binary.BigEndian.PutUint32(b[offBatchLength:], 0xffffffff) }), ErrBadLength},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseHeader(tc.b); !errors.Is(err, tc.wantErr) {
				t.Fatalf("ParseHeader error %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// with returns a mangled copy of b.
func with(b []byte, mangle func([]byte)) []byte {
	c := append([]byte(nil), b...)
	mangle(c)
	return c
}

// withCRC mangles a copy of b and then repairs the CRC, so that only the
// intended check fails.
func withCRC(b []byte, mangle func([]byte)) []byte {
	c := with(b, mangle)
	binary.BigEndian.PutUint32(c[offCRC:], CRC(c))
	return c
}

func TestValidate(t *testing.T) {
	good := build(sample(), []byte("some records"))
	control := sample()
	control.Attributes = ControlBit | TransactionalBit
	control.LastOffsetDelta, control.RecordCount = 0, 1

	tests := []struct {
		name    string
		b       []byte
		wantErr error // nil: valid
	}{
		{"valid", good, nil},
		{"valid without records section", build(sample(), nil), nil},
		{"valid control batch", build(control, []byte("marker")), nil},
		{"truncated header", good[:20], ErrTruncated},
		{"one byte missing", good[:len(good)-1], ErrBadLength},
		{"one byte extra", append(append([]byte(nil), good...), 0), ErrBadLength},
		{"payload bit flip", with(good, func(b []byte) { b[len(b)-1] ^= 0x10 }), ErrBadCRC},
		{"attributes bit flip", with(good, func(b []byte) { b[offAttributes+1] ^= 0x40 }), ErrBadCRC},
		{"stored CRC wrong", with(good, func(b []byte) { b[offCRC] ^= 1 }), ErrBadCRC},
		{"base offset outside the CRC", with(good, func(b []byte) { SetBaseOffset(b, 5) }), nil},
		{"leader epoch outside the CRC", with(good, func(b []byte) { SetLeaderEpoch(b, 50) }), nil},
		{"codec 5", withCRC(good, func(b []byte) { b[offAttributes+1] = b[offAttributes+1]&^CompressionMask | 5 }), ErrBadCompression},
		{"codec 7", withCRC(good, func(b []byte) { b[offAttributes+1] |= CompressionMask }), ErrBadCompression},
		{"count mismatch", withCRC(good, func(b []byte) { binary.BigEndian.PutUint32(b[offRecordCount:], 2) }), ErrBadCount},
		{"zero records", withCRC(good, func(b []byte) {
			binary.BigEndian.PutUint32(b[offRecordCount:], 0)
			binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 0xffffffff)
		}), ErrBadCount},
		{"negative last offset delta", withCRC(good, func(b []byte) { binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 0xfffffffe) }), ErrBadCount},
		{"max last offset delta", withCRC(good, func(b []byte) { binary.BigEndian.PutUint32(b[offLastOffsetDelta:], math.MaxInt32) }), ErrBadCount},
		{"control batch with zero records", withCRC(build(control, nil), func(b []byte) { binary.BigEndian.PutUint32(b[offRecordCount:], 0) }), ErrBadCount},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Validate(tc.b)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
			} else if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Validate error %v, want %v", err, tc.wantErr)
			}
			// ValidateFraming is the same check without the CRC: it
			// passes what only the CRC refuses, and nothing else.
			want := tc.wantErr
			if errors.Is(want, ErrBadCRC) {
				want = nil
			}
			_, err = ValidateFraming(tc.b)
			if want == nil {
				if err != nil {
					t.Fatalf("ValidateFraming: %v", err)
				}
			} else if !errors.Is(err, want) {
				t.Fatalf("ValidateFraming error %v, want %v", err, want)
			}
		})
	}
}

func TestSetFieldsInPlace(t *testing.T) {
	b := build(sample(), []byte("x"))
	SetBaseOffset(b, math.MaxInt64-10)
	SetLeaderEpoch(b, -1)
	h, err := Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != math.MaxInt64-10 || h.LeaderEpoch != -1 {
		t.Fatalf("header after rewrite: %+v", h)
	}
}

func TestSplit(t *testing.T) {
	a := build(sample(), []byte("first"))
	b := build(sample(), nil)
	c := build(sample(), make([]byte, 300))
	all := append(append(append([]byte(nil), a...), b...), c...)
	stop := errors.New("stop")

	tests := []struct {
		name      string
		buf       []byte
		stopAfter int // fn returns stop on this call (1-based); 0 never
		wantSizes []int
		wantErr   error
	}{
		{"empty", nil, 0, nil, nil},
		{"one", a, 0, []int{len(a)}, nil},
		{"three", all, 0, []int{len(a), len(b), len(c)}, nil},
		{"partial trailing batch", all[:len(all)-1], 0, []int{len(a), len(b)}, ErrTruncated},
		{"trailing bytes shorter than the length field", append(append([]byte(nil), a...), 1, 2, 3), 0, []int{len(a)}, ErrTruncated},
		{"length below the header", with(a, func(x []byte) { binary.BigEndian.PutUint32(x[offBatchLength:], 10) }), 0, nil, ErrBadLength},
		{"negative length", with(a, func(x []byte) { binary.BigEndian.PutUint32(x[offBatchLength:], 0x80000000) }), 0, nil, ErrBadLength},
		{"fn error stops the walk", all, 2, []int{len(a), len(b)}, stop},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sizes []int
			err := Split(tc.buf, func(batch []byte) error {
				sizes = append(sizes, len(batch))
				if len(sizes) == tc.stopAfter {
					return stop
				}
				return nil
			})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("Split error %v, want %v", err, tc.wantErr)
			}
			if len(sizes) != len(tc.wantSizes) {
				t.Fatalf("sizes %v, want %v", sizes, tc.wantSizes)
			}
			for i := range sizes {
				if sizes[i] != tc.wantSizes[i] {
					t.Fatalf("sizes %v, want %v", sizes, tc.wantSizes)
				}
			}
		})
	}
}

func TestLastSequence(t *testing.T) {
	const maxSeq = math.MaxInt32
	tests := []struct {
		base  int32
		delta int32
		want  int32
	}{
		{0, 0, 0},
		{0, 4, 4},
		{100, 9, 109},
		{maxSeq, 0, maxSeq},
		{maxSeq - 1, 1, maxSeq},
		{maxSeq, 1, 0},
		{maxSeq - 2, 4, 1},
		{maxSeq, maxSeq, maxSeq - 1},
		{NoSequence, 3, NoSequence},
		{-5, 3, NoSequence},
	}
	for _, tc := range tests {
		h := Header{BaseSequence: tc.base, LastOffsetDelta: tc.delta}
		if got := h.LastSequence(); got != tc.want {
			t.Errorf("LastSequence(base %d, delta %d) = %d, want %d", tc.base, tc.delta, got, tc.want)
		}
	}
}

func TestCRCMatchesKnownVector(t *testing.T) {
	// CRC-32C of "123456789" is 0xE3069283 (the standard check value). CRC
	// covers bytes from the attributes field on, so prefix 21 ignored bytes.
	b := append(make([]byte, offAttributes), "123456789"...)
	if got := CRC(b); got != 0xE3069283 {
		t.Fatalf("CRC = %08x, want e3069283", got)
	}
}

// BenchmarkValidate is what the leader saves per batch by checking the CRC
// once: "crc" is Validate, "framing" ValidateFraming, on a 1 MiB batch of
// 1 KiB records.
//
//	go test -run '^$' -bench 'Validate$' -benchmem -count 6 ./internal/batch/
func BenchmarkValidate(b *testing.B) {
	values := make([][]byte, 1024)
	for i := range values {
		values[i] = make([]byte, 1024)
	}
	bt := Build(values, 1_700_000_000_000)
	for _, tc := range []struct {
		name string
		fn   func([]byte) (Header, error)
	}{{"check=crc", Validate}, {"check=framing", ValidateFraming}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bt)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tc.fn(bt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
