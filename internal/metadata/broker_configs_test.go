package metadata

import (
	"errors"
	"reflect"
	"testing"
)

func brokerConfig(resource, name string, value *string) ConfigRecord {
	return ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: resource, Name: name, Value: value}
}

func TestConfigRecordApply(t *testing.T) {
	const rate = "leader.replication.throttled.rate"
	im := Empty("c")
	im1, err := im.Apply(
		brokerConfig("2", rate, ptr("100")),
		brokerConfig(ClusterDefaultBroker, rate, ptr("50")),
		brokerConfig("10", rate, ptr("7")),
	)
	if err != nil {
		t.Fatal(err)
	}
	if im.BrokerConfigs("2") != nil {
		t.Fatal("the old image changed")
	}
	if got := im1.BrokerConfigResources(); !reflect.DeepEqual(got, []string{"", "2", "10"}) {
		t.Fatalf("resources = %q", got)
	}
	if got := im1.BrokerConfigs("2")[rate]; got != "100" {
		t.Fatalf("broker 2 %s = %q", rate, got)
	}
	im2, err := im1.Apply(brokerConfig("2", rate, nil))
	if err != nil {
		t.Fatal(err)
	}
	if im2.BrokerConfigs("2") != nil {
		t.Fatal("a resource whose last config was deleted is still listed")
	}
	if im1.BrokerConfigs("2")[rate] != "100" {
		t.Fatal("deleting on the new image changed the old one")
	}
	// A snapshot's records rebuild the same configs.
	data, err := EncodeSnapshot(im1)
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, err := RestoreSnapshot(Empty("c"), 9, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range im1.BrokerConfigResources() {
		if !reflect.DeepEqual(rebuilt.BrokerConfigs(res), im1.BrokerConfigs(res)) {
			t.Fatalf("rebuilt %q = %v, want %v", res, rebuilt.BrokerConfigs(res), im1.BrokerConfigs(res))
		}
	}
}

func TestConfigRecordApplyRejects(t *testing.T) {
	for name, r := range map[string]ConfigRecord{
		"topic resource":  {ResourceType: 2, ResourceName: "t", Name: "k", Value: ptr("v")},
		"negative broker": brokerConfig("-1", "k", ptr("v")),
		"leading zero":    brokerConfig("01", "k", ptr("v")),
		"not a number":    brokerConfig("b1", "k", ptr("v")),
		"beyond int32":    brokerConfig("4294967296", "k", ptr("v")),
		"empty name":      brokerConfig("1", "", ptr("v")),
		"value too long":  brokerConfig("1", "k", ptr(string(make([]byte, MaxConfigValueLen+1)))),
		"key too long":    brokerConfig("1", string(make([]byte, MaxConfigKeyLen+1)), ptr("v")),
	} {
		if _, err := Empty("c").Apply(r); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%s: err = %v, want ErrInvalidRecord", name, err)
		}
	}
}
