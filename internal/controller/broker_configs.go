package controller

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

// BrokerConfigValidator checks the complete set of dynamic configs a
// broker resource would hold: perBroker for one broker's resource, false
// for the cluster-wide default (config.ValidateDynamic).
type BrokerConfigValidator func(perBroker bool, configs map[string]string) error

// AlterBrokerConfigs decides a change to the dynamic configs of the broker
// resource named resource ("" for the cluster-wide default, else a broker
// id): set maps a property to its new value, nil to delete it. It returns
// the ConfigRecords that make the change, none for a change that changes
// nothing. As Kafka's KRaft brokers and controller do, a resource name that
// is not a broker id, a read-only property, a per-broker one set as the
// default and an invalid value are all INVALID_REQUEST, with the
// validator's reason. A broker id need not be registered: Kafka accepts
// configs for a broker before it first starts.
func AlterBrokerConfigs(im *metadata.Image, resource string, set map[string]*string, validate BrokerConfigValidator) ([]metadata.Record, error) {
	if !metadata.ValidBrokerResourceName(resource) {
		return nil, errorf(kerr.InvalidRequest, "broker resource name %q is neither empty (the cluster default) nor a broker id", resource)
	}
	current := im.BrokerConfigs(resource)
	result := mergeConfigs(current, set)
	if len(result) > metadata.MaxConfigsPerTopic {
		return nil, errorf(kerr.InvalidRequest, "%d dynamic configs exceed the limit of %d", len(result), metadata.MaxConfigsPerTopic)
	}
	for k, v := range result {
		if len(k) > metadata.MaxConfigKeyLen || len(v) > metadata.MaxConfigValueLen {
			return nil, errorf(kerr.InvalidRequest, "config %.64q: name or value too long", k)
		}
	}
	if err := validate(resource != metadata.ClusterDefaultBroker, result); err != nil {
		return nil, &Error{Code: kerr.InvalidRequest, Detail: "invalid dynamic config for broker resource " + describeBrokerResource(resource), Cause: err}
	}
	var recs []metadata.Record
	for _, c := range configChanges(current, set) {
		recs = append(recs, metadata.ConfigRecord{ResourceType: metadata.ConfigResourceBroker, ResourceName: resource, Name: c.key, Value: c.value})
	}
	return recs, nil
}

func describeBrokerResource(resource string) string {
	if resource == metadata.ClusterDefaultBroker {
		return "<default>"
	}
	return resource
}
