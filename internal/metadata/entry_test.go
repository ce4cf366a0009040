package metadata

import (
	"reflect"
	"testing"
)

func TestEntryRoundTripAndDamage(t *testing.T) {
	recs := []Record{AllocateProducerIDs{NextID: 42}, AllocateProducerIDs{NextID: 1000}}
	b, err := EncodeEntry(recs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("decoded %v, want %v", got, recs)
	}
	if got, err := DecodeEntry(BarrierEntry); err != nil || len(got) != 0 {
		t.Fatalf("barrier decoded to %v, %v", got, err)
	}
	for _, bad := range [][]byte{nil, b[:len(b)-1], append(append([]byte{}, b...), 0)} {
		if _, err := DecodeEntry(bad); err == nil {
			t.Fatalf("damaged entry % x decoded without error", bad)
		}
	}
}
