package config

import (
	"slices"
	"strings"
)

// ConfigSource is Kafka's DescribeConfigs source code for a value.
type ConfigSource int8

const (
	SourceDynamicTopic ConfigSource = 1 // DYNAMIC_TOPIC_CONFIG: a topic override
	SourceStaticBroker ConfigSource = 4 // STATIC_BROKER_CONFIG: file, environment or flag
	SourceDefault      ConfigSource = 5 // DEFAULT_CONFIG: nobody set it
)

func (s ConfigSource) String() string {
	switch s {
	case SourceDynamicTopic:
		return "DYNAMIC_TOPIC_CONFIG"
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
	// ReadOnly is true for broker properties: Skein has no dynamic broker
	// configuration, so AlterConfigs on a broker must be refused.
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
		synonyms = append(synonyms, brokerSynonyms(b.Raw, p)...)
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
// source and synonyms, sorted by name.
func DescribeBroker(b *Broker) []ConfigEntry {
	var out []ConfigEntry
	for _, p := range theRegistry().all {
		if p.Name == "" {
			continue
		}
		value, _, explicit := resolveBroker(b.Raw, p)
		source := SourceDefault
		if explicit {
			source = SourceStaticBroker
		}
		e := ConfigEntry{
			Name:      p.Name,
			Value:     value,
			Source:    source,
			ReadOnly:  true,
			Type:      p.Kind.ConfigType(),
			Doc:       p.Doc,
			Synonyms:  brokerSynonyms(b.Raw, p),
			Sensitive: p.Sensitive,
		}
		if p.Sensitive {
			e.Value = ""
			for i := range e.Synonyms {
				e.Synonyms[i].Value = ""
			}
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b ConfigEntry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// brokerSynonyms lists, for p and its fallbacks in precedence order, the
// explicitly set values and then the defaults. Values are as written (in
// each synonym's own unit), as Kafka shows them.
func brokerSynonyms(values map[string]string, p *Property) []ConfigSynonym {
	chain := []string{p.Name}
	for _, f := range p.Fallbacks {
		chain = append(chain, f.Name)
	}
	var out []ConfigSynonym
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
