package metadata

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ConfigResourceBroker is Kafka's ConfigResource type code of a broker
// (ConfigResource.Type.BROKER), the only resource type ConfigRecord
// carries: topic overrides are SetTopicConfig records.
const ConfigResourceBroker int8 = 4

// ClusterDefaultBroker is the resource name of the cluster-wide default of
// dynamic broker configs (kafka-configs --entity-default); "N" names
// broker N.
const ClusterDefaultBroker = ""

// MaxBrokerConfigResources bounds the broker resources with dynamic
// configs in one image: the cluster default plus one per broker id ever
// configured.
const MaxBrokerConfigResources = 10_000

// ConfigRecord sets (Value != nil) or deletes (Value == nil) one dynamic
// config of a resource, as Kafka's ConfigRecord does. ResourceType must be
// ConfigResourceBroker; ResourceName is ClusterDefaultBroker or a broker
// id in decimal. The values are checked by the controller against the
// config registry before it writes the record; Apply checks only the
// shape, so every node applies the same log the same way whatever its
// version of the registry.
type ConfigRecord struct {
	ResourceType int8
	ResourceName string
	Name         string
	Value        *string `json:",omitempty"`
}

func (ConfigRecord) isRecord() {}

// ValidBrokerResourceName reports whether name is the cluster default or
// a broker id in canonical decimal (no sign, no leading zero).
func ValidBrokerResourceName(name string) bool {
	if name == ClusterDefaultBroker {
		return true
	}
	n, err := strconv.ParseInt(name, 10, 32)
	return err == nil && n >= 0 && strconv.FormatInt(n, 10) == name
}

// BrokerConfigs returns the dynamic configs of one broker resource (the
// cluster default for ClusterDefaultBroker), nil when it has none. The map
// is shared: do not modify it.
func (im *Image) BrokerConfigs(resource string) map[string]string {
	return im.brokerConfigs[resource]
}

// BrokerConfigResources lists the broker resources that have dynamic
// configs, sorted (the cluster default first).
func (im *Image) BrokerConfigResources() []string {
	return slices.SortedFunc(maps.Keys(im.brokerConfigs), compareBrokerResource)
}

// compareBrokerResource orders the cluster default first, then brokers
// by id.
func compareBrokerResource(a, b string) int {
	// Canonical decimals: the shorter is the smaller.
	return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
}

func (b *builder) applyConfigRecord(r ConfigRecord) error {
	if r.ResourceType != ConfigResourceBroker {
		return fmt.Errorf("config record: resource type %d is not a broker (%d)", r.ResourceType, ConfigResourceBroker)
	}
	if !ValidBrokerResourceName(r.ResourceName) {
		return fmt.Errorf("config record: broker resource name %q is not a broker id", r.ResourceName)
	}
	if err := validateConfigEntry(r.Name, r.Value); err != nil {
		return fmt.Errorf("config record of broker %q: %w", r.ResourceName, err)
	}
	all, err := withValue(b.img.brokerConfigs, r.ResourceName, r.Name, r.Value, MaxBrokerConfigResources)
	if err != nil {
		return fmt.Errorf("config record of broker %q: %w", r.ResourceName, err)
	}
	b.img.brokerConfigs = all
	return nil
}

// brokerConfigRecords rebuild the image's dynamic broker configs (for
// snapshots).
func brokerConfigRecords(im *Image) []Record {
	var recs []Record
	for _, res := range im.BrokerConfigResources() {
		values := im.brokerConfigs[res]
		for _, k := range slices.Sorted(maps.Keys(values)) {
			v := values[k]
			recs = append(recs, ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: res, Name: k, Value: &v})
		}
	}
	return recs
}
