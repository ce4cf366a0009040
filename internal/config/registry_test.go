package config

import (
	"strings"
	"testing"
)

func TestRegistryIsConsistent(t *testing.T) {
	brokerNames := map[string]bool{}
	topicNames := map[string]bool{}
	for _, table := range [][]Property{brokerProperties, topicProperties, compatProperties} {
		for i := range table {
			p := &table[i]
			id := p.sortKey()
			// Kafka gives every topic property a broker synonym but the
			// throttled-replicas lists, which name replicas of one topic.
			topicOnly := p.TopicName == "leader.replication.throttled.replicas" || p.TopicName == "follower.replication.throttled.replicas"
			if p.Name == "" && !topicOnly {
				t.Errorf("%s: every property needs a broker name (Kafka has one for every topic property)", id)
			}
			if p.Name != "" && brokerNames[p.Name] {
				t.Errorf("broker name %s defined twice", p.Name)
			}
			brokerNames[p.Name] = true
			if p.TopicName != "" {
				if topicNames[p.TopicName] {
					t.Errorf("topic name %s defined twice", p.TopicName)
				}
				topicNames[p.TopicName] = true
			}
			// The environment mapping turns '_' into '.', so a name with an
			// underscore could never be set from the environment.
			if strings.ContainsAny(p.Name+p.TopicName, "_ =:") {
				t.Errorf("%s: names must be dotted lower-case words", id)
			}
			if p.Name != strings.ToLower(p.Name) {
				t.Errorf("%s: broker names are lower case (the environment mapping lower-cases)", id)
			}
			if p.Doc == "" || strings.Contains(p.Doc, "\n") || !strings.HasSuffix(p.Doc, ".") {
				t.Errorf("%s: doc must be one sentence-terminated line: %q", id, p.Doc)
			}
			if reason, ok := p.Validate(p.Default); !ok {
				t.Errorf("%s: default %q is invalid: %s", id, p.Default, reason)
			}
			if p.Kind.isNumeric() {
				lo, hi := intBounds(p.Kind.bitSize())
				if p.Min > p.Max || p.Min < lo || p.Max > hi {
					t.Errorf("%s: bounds [%d, %d] do not fit a %s", id, p.Min, p.Max, p.Kind)
				}
				if p.Kind == KindDurationMs && p.TopicName == "" && p.Max > maxDurationMs {
					t.Errorf("%s: broker durations become time.Duration; Max must be at most maxDurationMs", id)
				}
			}
			if (p.Kind == KindEnum) != (len(p.Values) > 0) && p.Kind != KindList {
				t.Errorf("%s: Values are for enums and lists only, and every enum needs them", id)
			}
			for _, f := range p.Fallbacks {
				if _, ok := LookupBroker(f.Name); !ok || f.Scale <= 0 {
					t.Errorf("%s: bad fallback %+v", id, f)
				}
			}
		}
	}
	for name := range replacedKafkaProperties {
		if brokerNames[name] {
			t.Errorf("%s is both accepted and refused", name)
		}
	}
}

func TestLookup(t *testing.T) {
	p, ok := LookupTopic("retention.ms")
	if !ok || p.Name != "log.retention.ms" || p.Scope() != ScopeBroker|ScopeTopic {
		t.Errorf("LookupTopic(retention.ms) = %+v, %v", p, ok)
	}
	p, ok = LookupBroker("node.id")
	if !ok || p.Scope() != ScopeBroker {
		t.Errorf("LookupBroker(node.id) = %+v, %v", p, ok)
	}
	if _, ok := LookupBroker("retention.ms"); ok {
		t.Error("retention.ms is not a broker name")
	}
	if _, ok := LookupTopic("node.id"); ok {
		t.Error("node.id is not a topic name")
	}
	// Properties returns copies: changing one must not change the registry.
	props := Properties()
	props[0].Default = "changed"
	if Properties()[0].Default == "changed" {
		t.Error("Properties exposes the registry itself")
	}
}

func TestKindConfigType(t *testing.T) {
	tests := map[Kind]int8{
		KindInt: ConfigTypeInt, KindShort: ConfigTypeShort, KindLong: ConfigTypeLong,
		KindDurationMs: ConfigTypeLong, KindBool: ConfigTypeBoolean, KindString: ConfigTypeString,
		KindEnum: ConfigTypeString, KindList: ConfigTypeList,
	}
	for kind, want := range tests {
		if got := kind.ConfigType(); got != want {
			t.Errorf("%s.ConfigType() = %d, want %d", kind, got, want)
		}
	}
}
