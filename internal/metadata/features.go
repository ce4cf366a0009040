package metadata

import (
	"fmt"
	"maps"
	"slices"
)

// FeatureLevel finalizes a feature at a level (Kafka's FeatureLevelRecord):
// the cluster-wide level every broker applies. Level 0 removes the
// feature from the finalized set (a level of 0 is not finalized, as
// KIP-584 has it). The one feature recorded here is transaction.version
// (KIP-890 part 2, KIP-1022); kraft.version lives in the quorum log.
type FeatureLevel struct {
	Name  string
	Level int16
}

func (FeatureLevel) isRecord() {}

// TransactionVersionFeature is transaction.version's feature name.
const TransactionVersionFeature = "transaction.version"

// Transaction versions (Kafka's TransactionVersion): 0 the protocol of
// KIP-98; 1 flexible TransactionLogValue records; 2 KIP-890 part 2, a new
// producer epoch per transaction (EndTxn v5, Produce v12's implicit
// AddPartitionsToTxn, TxnOffsetCommit v5's implicit AddOffsetsToTxn).
const (
	TransactionVersionMin int16 = 0
	TransactionVersionMax int16 = 2
	// TransactionVersionDefault is what a new cluster starts at, as Kafka
	// 4.0's storage tool formats a new cluster.
	TransactionVersionDefault int16 = 2
)

// maxFeatures bounds the finalized features an image holds.
const maxFeatures = 64

// FeatureLevel is a feature's finalized level, 0 when not finalized.
func (im *Image) FeatureLevel(name string) int16 { return im.features[name] }

// FinalizedFeatures are the features at a level above 0, by name.
func (im *Image) FinalizedFeatures() map[string]int16 { return maps.Clone(im.features) }

// TransactionVersion is the finalized transaction.version.
func (im *Image) TransactionVersion() int16 { return im.features[TransactionVersionFeature] }

// Fresh reports whether im is the metadata of a cluster that has never
// had a broker, a topic or a finalized feature: the first broker
// registration then bootstraps the new cluster's feature levels.
func (im *Image) Fresh() bool {
	return len(im.brokers) == 0 && len(im.topicsByName) == 0 && len(im.features) == 0 && im.nextProducerID == 0
}

func (b *builder) setFeature(r FeatureLevel) error {
	switch {
	case r.Name == "":
		return fmt.Errorf("feature level: empty feature name")
	case r.Name != TransactionVersionFeature:
		return fmt.Errorf("feature level: unknown feature %q", r.Name)
	case r.Level < TransactionVersionMin || r.Level > TransactionVersionMax:
		return fmt.Errorf("feature level: %s %d outside %d to %d", r.Name, r.Level, TransactionVersionMin, TransactionVersionMax)
	case r.Level > 0 && len(b.img.features) >= maxFeatures && b.img.features[r.Name] == 0:
		return fmt.Errorf("feature level: more than %d features", maxFeatures)
	}
	b.img.features = maps.Clone(b.img.features)
	if b.img.features == nil {
		b.img.features = map[string]int16{}
	}
	if r.Level == 0 {
		delete(b.img.features, r.Name)
	} else {
		b.img.features[r.Name] = r.Level
	}
	return nil
}

// featureImageRecords rebuild the image's finalized features.
func featureImageRecords(im *Image) []Record {
	var recs []Record
	for _, name := range slices.Sorted(maps.Keys(im.features)) {
		recs = append(recs, FeatureLevel{Name: name, Level: im.features[name]})
	}
	return recs
}
