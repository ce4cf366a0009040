package records

import (
	"testing"

	"github.com/skein-log/skein/internal/batch"
)

// FuzzDecode feeds arbitrary bytes to Decode, once as given and once with
// the length and CRC repaired so that mutations reach the decompressors and
// the record decoder instead of stopping at the CRC check.
func FuzzDecode(f *testing.F) {
	for _, c := range allCodecs {
		f.Add(batchSpec{codec: c.codec, records: sampleRecords()}.build(f))
	}
	f.Add(make([]byte, batch.HeaderSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
		if len(data) >= batch.HeaderSize {
			checkDecode(t, fixLengthAndCRC(append([]byte(nil), data...)))
		}
	})
}

func checkDecode(t *testing.T, data []byte) {
	h, recs, err := Decode(data, 64<<10)
	if err != nil {
		return
	}
	if len(recs) != int(h.RecordCount) {
		t.Fatalf("decoded %d records, header count %d", len(recs), h.RecordCount)
	}
	prev := int32(-1)
	for _, r := range recs {
		if r.OffsetDelta <= prev || r.OffsetDelta > h.LastOffsetDelta {
			t.Fatalf("offset delta %d after %d, last %d", r.OffsetDelta, prev, h.LastOffsetDelta)
		}
		prev = r.OffsetDelta
	}
}
