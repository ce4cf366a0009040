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

// TestSnapshotRestoresImageAtIndex: a restored snapshot's image has the
// snapshot's log index as its version (the metadata offset a broker
// reports), not the count of its records, and the same content.
func TestSnapshotRestoresImageAtIndex(t *testing.T) {
	im, err := Empty("c").Apply(AllocateProducerIDs{NextID: 1000})
	if err != nil {
		t.Fatal(err)
	}
	data, err := EncodeSnapshot(im.WithVersion(57))
	if err != nil {
		t.Fatal(err)
	}
	got, err := RestoreSnapshot(Empty("c"), 57, data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version() != 57 || got.NextProducerID() != 1000 {
		t.Fatalf("restored version %d, next producer id %d; want 57 and 1000", got.Version(), got.NextProducerID())
	}
	if _, err := RestoreSnapshot(Empty("c"), 57, data[:len(data)-1]); err == nil {
		t.Fatal("a damaged snapshot restored without error")
	}
}
