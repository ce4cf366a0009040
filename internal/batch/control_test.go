package batch

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestMarkerRoundTrip(t *testing.T) {
	for _, m := range []Marker{{Commit: true, CoordinatorEpoch: 7}, {Commit: false, CoordinatorEpoch: 0}} {
		b := BuildMarker(42, 3, m, 1000)
		h, err := Validate(b)
		if err != nil {
			t.Fatal(err)
		}
		if !h.IsControl() || !h.IsTransactional() || h.ProducerID != 42 || h.ProducerEpoch != 3 || h.BaseSequence != NoSequence || h.RecordCount != 1 {
			t.Fatalf("header %+v", h)
		}
		got, err := ParseMarker(b)
		if err != nil || got != m {
			t.Fatalf("ParseMarker = %+v, %v; want %+v", got, err, m)
		}
	}
}

// The key layout is Kafka's: version 0, then the type (0 abort, 1 commit).
func TestMarkerKeyBytes(t *testing.T) {
	b := BuildMarker(1, 0, Marker{Commit: true, CoordinatorEpoch: 5}, 0)
	key, value, err := firstRecordKeyValue(b[HeaderSize:])
	if err != nil {
		t.Fatal(err)
	}
	if string(key) != "\x00\x00\x00\x01" {
		t.Fatalf("key % x", key)
	}
	if binary.BigEndian.Uint16(value) != 0 || binary.BigEndian.Uint32(value[2:]) != 5 {
		t.Fatalf("value % x", value)
	}
}

func TestParseMarkerRefuses(t *testing.T) {
	data := BuildProducer([][]byte{[]byte("x")}, 0, 1, 0, 0)
	if _, err := ParseMarker(data); !errors.Is(err, ErrBadControl) {
		t.Fatalf("data batch: %v", err)
	}
	b := BuildMarker(1, 0, Marker{}, 0)
	// Unknown control type 9.
	bad := append([]byte(nil), b...)
	key, _, _ := firstRecordKeyValue(bad[HeaderSize:])
	key[3] = 9
	if _, err := ParseMarker(bad); !errors.Is(err, ErrBadControl) {
		t.Fatalf("type 9: %v", err)
	}
	for n := HeaderSize; n < len(b); n++ {
		cut := append([]byte(nil), b[:n]...)
		if _, err := ParseMarker(cut); err == nil {
			t.Fatalf("cut at %d parsed", n)
		}
	}
}
