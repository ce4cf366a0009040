package config

import (
	"maps"
	"slices"
	"strings"
)

// ConfigSource is Kafka's DescribeConfigs source code for a value.
type ConfigSource int8

const (
	SourceDynamicTopic         ConfigSource = 1 // DYNAMIC_TOPIC_CONFIG: a topic override
	SourceDynamicBroker        ConfigSource = 2 // DYNAMIC_BROKER_CONFIG: set for this broker at runtime
	SourceDynamicDefaultBroker ConfigSource = 3 // DYNAMIC_DEFAULT_BROKER_CONFIG: the cluster-wide dynamic default
	SourceStaticBroker         ConfigSource = 4 // STATIC_BROKER_CONFIG: file, environment or flag
	SourceDefault              ConfigSource = 5 // DEFAULT_CONFIG: nobody set it
)

func (s ConfigSource) String() string {
	switch s {
	case SourceDynamicTopic:
		return "DYNAMIC_TOPIC_CONFIG"
	case SourceDynamicBroker:
		return "DYNAMIC_BROKER_CONFIG"
	case SourceDynamicDefaultBroker:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case SourceStaticBroker:
		return "STATIC_BROKER_CONFIG"
	case SourceDefault:
		return "DEFAULT_CONFIG"
	}
	return "UNKNOWN"
}

// ConfigEntry is one row of a DescribeConfigs answer.
type ConfigEntry struct {
	Name   string
	Value  string
	Source ConfigSource
	// ReadOnly is true for a broker property whose update mode is
	// read-only: AlterConfigs on a broker refuses it.
	ReadOnly bool
	Type     int8 // ConfigType* code
	Doc      string
	// Sensitive entries carry no Value (nor synonyms' values).
	Sensitive bool
	// Synonyms are every place the value could have come from, most
	// specific first, as Kafka lists them (include_synonyms=true).
	Synonyms []ConfigSynonym
}

// ConfigSynonym is one candidate source of a ConfigEntry's value.
type ConfigSynonym struct {
	Name   string
	Value  string
	Source ConfigSource
}

// DescribeTopic lists every topic property of a topic with its effective
// value, source and synonyms, sorted by name. overrides are the topic's own
// settings by topic-level name.
func DescribeTopic(b *Broker, overrides map[string]string) ([]ConfigEntry, error) {
	if err := ValidateTopicOverrides(overrides); err != nil {
		return nil, err
	}
	var out []ConfigEntry
	for _, p := range theRegistry().all {
		if p.TopicName == "" {
			continue
		}
		var synonyms []ConfigSynonym
		value, _, _ := resolveBroker(b.Raw, p)
		if v, ok := overrides[p.TopicName]; ok {
			value = strings.TrimSpace(v)
			synonyms = append(synonyms, ConfigSynonym{Name: p.TopicName, Value: value, Source: SourceDynamicTopic})
		}
		// No topic property's broker synonym is dynamic (a registry test
		// checks), so the topic's value never comes from a dynamic layer.
		synonyms = append(synonyms, brokerSynonyms(b.Raw, Dynamic{}, p)...)
		out = append(out, ConfigEntry{
			Name:     p.TopicName,
			Value:    value,
			Source:   synonyms[0].Source,
			Type:     p.Kind.ConfigType(),
			Doc:      p.Doc,
			Synonyms: synonyms,
		})
	}
	slices.SortFunc(out, func(a, b ConfigEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DescribeBroker lists every broker property with its effective value,
// source and synonyms, sorted by name: the DescribeConfigs answer for the
// BROKER resource of this broker, whose dynamic configuration is d.
func DescribeBroker(b *Broker, d Dynamic) []ConfigEntry {
	var out []ConfigEntry
	for _, p := range theRegistry().all {
		if p.Name == "" {
			continue
		}
		value, source := resolveDynamic(b.Raw, d, p)
		out = append(out, brokerEntry(p, value, source, brokerSynonyms(b.Raw, d, p)))
	}
	slices.SortFunc(out, func(a, b ConfigEntry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// DescribeBrokerDefault lists the cluster-wide dynamic defaults, sorted by
// name: the DescribeConfigs answer for the BROKER resource "" (Kafka lists
// only what is set there, with this broker's static values and the
// defaults as synonyms, never a per-broker value).
func DescribeBrokerDefault(b *Broker, d Dynamic) []ConfigEntry {
	def := Dynamic{Default: d.Default}
	var out []ConfigEntry
	for _, name := range slices.Sorted(maps.Keys(d.Default)) {
		p := theRegistry().byName[name]
		if p == nil || p.Update == UpdateReadOnly {
			continue // not a value this node applies
		}
		out = append(out, brokerEntry(p, d.Default[name], SourceDynamicDefaultBroker, brokerSynonyms(b.Raw, def, p)))
	}
	return out
}

func brokerEntry(p *Property, value string, source ConfigSource, synonyms []ConfigSynonym) ConfigEntry {
	e := ConfigEntry{
		Name:      p.Name,
		Value:     value,
		Source:    source,
		ReadOnly:  p.Update == UpdateReadOnly,
		Type:      p.Kind.ConfigType(),
		Doc:       p.Doc,
		Synonyms:  synonyms,
		Sensitive: p.Sensitive,
	}
	if p.Sensitive {
		e.Value = ""
		for i := range e.Synonyms {
			e.Synonyms[i].Value = ""
		}
	}
	return e
}

// brokerSynonyms lists, for p and its fallbacks in precedence order, the
// values set per broker dynamically, then as the dynamic cluster default,
// then statically, and then the defaults, as Kafka does. Values are as
// written (in each synonym's own unit), as Kafka shows them.
func brokerSynonyms(values map[string]string, d Dynamic, p *Property) []ConfigSynonym {
	chain := []string{p.Name}
	for _, f := range p.Fallbacks {
		chain = append(chain, f.Name)
	}
	var out []ConfigSynonym
	for _, l := range d.layers(p) {
		for _, name := range chain {
			if v, ok := explicitValue(l.values, name); ok {
				out = append(out, ConfigSynonym{Name: name, Value: v, Source: l.source})
			}
		}
	}
	for _, name := range chain {
		if v, ok := explicitValue(values, name); ok {
			out = append(out, ConfigSynonym{Name: name, Value: v, Source: SourceStaticBroker})
		}
	}
	for _, name := range chain {
		if q := theRegistry().byName[name]; q != nil && q.Default != "" {
			out = append(out, ConfigSynonym{Name: name, Value: q.Default, Source: SourceDefault})
		}
	}
	if len(out) == 0 {
		// A property with neither a value nor a default (cluster.id), or
		// a topic-only one with its empty default.
		name := p.Name
		if name == "" {
			name = p.TopicName
		}
		out = append(out, ConfigSynonym{Name: name, Value: p.Default, Source: SourceDefault})
	}
	return out
}
