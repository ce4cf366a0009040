package batch

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestValidateStoredAcceptsCompactedShapes(t *testing.T) {
	orig := Header{BaseOffset: 40, LeaderEpoch: 3, LastOffsetDelta: 4, ProducerID: 7, ProducerEpoch: 1, BaseSequence: 10}
	for _, tc := range []struct {
		name    string
		count   int32
		wantErr error
	}{
		{"all records", 5, nil},
		{"fewer records than offsets", 2, nil},
		{"empty, kept for its producer", 0, nil},
		{"more records than offsets", 6, ErrBadCount},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Filtered(orig, DeleteHorizonBit, 5000, 4000, tc.count, nil)
			h, err := ValidateStored(b)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("ValidateStored: %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if h.BaseOffset != 40 || h.LastOffset() != 44 || h.LeaderEpoch != 3 || h.ProducerID != 7 ||
				h.ProducerEpoch != 1 || h.BaseSequence != 10 || h.LastSequence() != 14 ||
				!h.HasDeleteHorizon() || h.BaseTimestamp != 5000 || h.MaxTimestamp != 4000 {
				t.Fatalf("header %+v", h)
			}
			// Client batches stay strict.
			if _, err := Validate(b); tc.count != 5 && !errors.Is(err, ErrBadCount) {
				t.Fatalf("Validate accepted a compacted batch: %v", err)
			}
		})
	}
	b := Filtered(orig, 0, 0, 0, 5, nil)
	binary.BigEndian.PutUint32(b[offRecordCount:], 0xffffffff)
	binary.BigEndian.PutUint32(b[offCRC:], CRC(b))
	if _, err := ValidateStored(b); !errors.Is(err, ErrBadCount) {
		t.Fatalf("negative count: %v", err)
	}
	b = Filtered(orig, 0, 0, 0, 5, nil)
	b[len(b)-1] ^= 1
	if _, err := ValidateStored(b); !errors.Is(err, ErrBadCRC) {
		t.Fatalf("bad CRC: %v", err)
	}
}
