package metadata

import (
	"errors"
	"testing"
)

func TestFeatureLevels(t *testing.T) {
	im := Empty("c")
	if !im.Fresh() || im.TransactionVersion() != 0 {
		t.Fatalf("empty image: fresh %v, transaction.version %d", im.Fresh(), im.TransactionVersion())
	}
	im2, err := im.Apply(FeatureLevel{Name: TransactionVersionFeature, Level: 2})
	if err != nil {
		t.Fatal(err)
	}
	if im2.TransactionVersion() != 2 || im2.Fresh() || im.TransactionVersion() != 0 {
		t.Fatalf("after level 2: %d (fresh %v), the old image %d", im2.TransactionVersion(), im2.Fresh(), im.TransactionVersion())
	}
	// A snapshot keeps it.
	snap, err := EncodeSnapshot(im2)
	if err != nil {
		t.Fatal(err)
	}
	restored, err := RestoreSnapshot(Empty("c"), 7, snap)
	if err != nil || restored.TransactionVersion() != 2 {
		t.Fatalf("restored: %v, level %d", err, restored.TransactionVersion())
	}
	// Level 0 is not finalized.
	im3, err := im2.Apply(FeatureLevel{Name: TransactionVersionFeature, Level: 0})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := im3.FinalizedFeatures()[TransactionVersionFeature]; ok || im2.TransactionVersion() != 2 {
		t.Fatalf("level 0 still finalized: %v", im3.FinalizedFeatures())
	}
	for _, bad := range []FeatureLevel{{Name: "", Level: 1}, {Name: "group.version", Level: 1}, {Name: TransactionVersionFeature, Level: 3}, {Name: TransactionVersionFeature, Level: -1}} {
		if _, err := im.Apply(bad); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%+v: %v, want an invalid record", bad, err)
		}
	}
}
