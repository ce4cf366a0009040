package batch

import (
	"encoding/binary"
	"testing"
)

// FuzzSplitValidate walks arbitrary buffers as Split does in a produce
// request and validates each piece. Nothing may panic; a batch Validate
// accepts must agree with its own length and CRC and have sane counts.
// Each input is also tried as one batch with its length and CRC repaired,
// so that mutations get past those checks.
func FuzzSplitValidate(f *testing.F) {
	one := build(sample(), []byte("records"))
	f.Add(one)
	f.Add(append(append([]byte(nil), one...), build(sample(), nil)...))
	f.Add(one[:30])
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSplit(t, data)
		if len(data) >= HeaderSize {
			checkSplit(t, asOneBatch(data))
		}
	})
}

func checkSplit(t *testing.T, data []byte) {
	total := 0
	_ = Split(data, func(b []byte) error {
		if len(b) < HeaderSize {
			t.Fatalf("Split yielded %d bytes, less than a header", len(b))
		}
		total += len(b)
		h, err := Validate(b)
		if err != nil {
			return nil // invalid batches are fine; keep walking like a scanner
		}
		if h.Size() != len(b) || CRC(b) != h.CRC || h.Magic != 2 {
			t.Fatalf("Validate accepted an inconsistent batch: %+v, %d bytes", h, len(b))
		}
		if h.RecordCount <= 0 || h.LastOffsetDelta < 0 || (!h.IsControl() && h.RecordCount != h.LastOffsetDelta+1) {
			t.Fatalf("Validate accepted bad counts: %+v", h)
		}
		if h.Compression() > CompressionZstd {
			t.Fatalf("Validate accepted codec %d", h.Compression())
		}
		return nil
	})
	if total > len(data) {
		t.Fatalf("Split yielded %d bytes from %d", total, len(data))
	}
}

// asOneBatch returns a copy of data whose length field and CRC describe all
// of data as one batch.
func asOneBatch(data []byte) []byte {
	c := append([]byte(nil), data...)
	binary.BigEndian.PutUint32(c[offBatchLength:], uint32(len(c)-LogOverhead))
	binary.BigEndian.PutUint32(c[offCRC:], CRC(c))
	return c
}
