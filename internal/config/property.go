package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// maxValueLen bounds any single property value: long enough for a voter list
// of a hundred nodes, short enough that a corrupt file cannot balloon memory.
const maxValueLen = 16 << 10

// Property is one entry of the registry.
type Property struct {
	// Name is the broker-level (server.properties) name; empty for a
	// property that exists only per topic.
	Name string
	// TopicName is the topic-level name; empty for a broker-only property.
	// When both are set the broker property is the cluster-wide default of
	// the topic property (Kafka's "synonym").
	TopicName string
	Kind      Kind
	// Default as it would be written in a file. An empty Default on a
	// numeric kind means "unset": the value then comes from Fallbacks.
	Default string
	// Doc is one line for the reference and DescribeConfigs.
	Doc string
	// Min and Max bound the integer and double kinds (inclusive).
	Min, Max int64
	// Values lists what an enum, or each item of a list, may be.
	Values []string
	// NonEmpty rejects an empty list.
	NonEmpty bool
	// Fallbacks are consulted, in order, when this property is not set
	// explicitly: Kafka's log.retention.ms > log.retention.minutes >
	// log.retention.hours chain.
	Fallbacks []Fallback
	// Ignored marks a Kafka property accepted only so that an unmodified
	// Kafka server.properties loads; Skein has no use for its value.
	Ignored bool
	// Update is how the broker property may change at runtime (Kafka's
	// update mode); read-only unless the broker applies a new value
	// without a restart.
	Update UpdateMode
	// Sensitive values (private keys, passwords) are never shown:
	// DescribeConfigs answers them as null with is_sensitive set, and
	// errors do not quote them.
	Sensitive bool

	// format describes, for the documentation and errors, what check accepts.
	format string
	// check is a property-specific rule run after the kind's own parsing.
	// Its error text explains what is wrong with the value.
	check func(value string) error
}

// Fallback names a broker property used when the primary one is unset,
// scaled into the primary's unit (hours to milliseconds, for example).
type Fallback struct {
	Name  string
	Scale int64
}

// Scope says where a property may be set.
type Scope int

const (
	ScopeBroker Scope = 1 << iota
	ScopeTopic
)

// Scope reports whether the property is broker-level, topic-level or both.
func (p *Property) Scope() Scope {
	var s Scope
	if p.Name != "" {
		s |= ScopeBroker
	}
	if p.TopicName != "" {
		s |= ScopeTopic
	}
	return s
}

// Allowed describes the values the property accepts, e.g. "an integer
// between 1 and 100000". Error messages prefix it with "must be".
func (p *Property) Allowed() string {
	switch p.Kind {
	case KindInt, KindShort, KindLong, KindDurationMs:
		noun := "an integer"
		if p.Kind == KindDurationMs {
			noun = "a number of milliseconds"
		}
		lo, hi := intBounds(p.Kind.bitSize())
		if p.Kind == KindDurationMs && p.Max == maxDurationMs {
			hi = maxDurationMs // the most a time.Duration holds: no limit in practice
		}
		switch {
		case p.Min == lo && p.Max == hi:
			return noun
		case p.Max == hi:
			return fmt.Sprintf("%s of at least %d", noun, p.Min)
		default:
			return fmt.Sprintf("%s between %d and %d", noun, p.Min, p.Max)
		}
	case KindDouble:
		return fmt.Sprintf("a number between %d and %d", p.Min, p.Max)
	case KindBool:
		return "true or false"
	case KindEnum:
		return "one of " + strings.Join(p.Values, ", ")
	case KindList:
		s := "a comma-separated list"
		if len(p.Values) > 0 {
			s += " of " + strings.Join(p.Values, ", ")
		}
		if p.format != "" {
			s += " of " + p.format
		}
		if p.NonEmpty {
			s = "a non-empty " + strings.TrimPrefix(s, "a ")
		}
		return s
	}
	if p.format != "" {
		return p.format
	}
	return fmt.Sprintf("text of at most %d bytes", maxValueLen)
}

// Validate checks one value against the property's kind and rules. The
// returned reason completes "must be ..." and may carry a detail.
func (p *Property) Validate(value string) (reason string, ok bool) {
	if len(value) > maxValueLen {
		return fmt.Sprintf("%s (at most %d bytes)", p.Allowed(), maxValueLen), false
	}
	v := strings.TrimSpace(value)
	if err := p.checkKind(v); err != nil {
		if msg := err.Error(); msg != "" {
			return p.Allowed() + ": " + msg, false
		}
		return p.Allowed(), false
	}
	if p.check != nil {
		if err := p.check(v); err != nil {
			return p.Allowed() + ": " + err.Error(), false
		}
	}
	return "", true
}

// errPlain signals "not allowed" with nothing to add to Allowed().
var errPlain = errors.New("")

func (p *Property) checkKind(v string) error {
	switch p.Kind {
	case KindInt, KindShort, KindLong, KindDurationMs:
		if v == "" && p.Default == "" {
			return nil // explicitly unset: fall back
		}
		n, err := strconv.ParseInt(v, 10, p.Kind.bitSize())
		if err != nil || n < p.Min || n > p.Max {
			return errPlain
		}
	case KindDouble:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || f < float64(p.Min) || f > float64(p.Max) {
			return errPlain
		}
	case KindBool:
		if _, err := parseBool(v); err != nil {
			return errPlain
		}
	case KindEnum:
		if !slices.Contains(p.Values, v) {
			return errPlain
		}
	case KindList:
		items, err := splitList(v)
		if err != nil {
			return err
		}
		if p.NonEmpty && len(items) == 0 {
			return errPlain
		}
		if len(p.Values) > 0 {
			for i, item := range items {
				if !slices.Contains(p.Values, item) {
					return fmt.Errorf("%q is not allowed", item)
				}
				if slices.Contains(items[:i], item) {
					return fmt.Errorf("%q appears twice", item)
				}
			}
		}
	}
	return nil
}

func intBounds(bits int) (lo, hi int64) {
	switch bits {
	case 16:
		return math.MinInt16, math.MaxInt16
	case 32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// parseBool accepts what Kafka's ConfigDef accepts: true/false in any case.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("not a boolean: %q", v)
}

// splitList splits Kafka's comma-separated lists: spaces around items are
// dropped and an empty string is an empty list, but an empty item between
// two commas is a mistake worth reporting.
func splitList(v string) ([]string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	parts := strings.Split(v, ",")
	for i, part := range parts {
		parts[i] = strings.TrimSpace(part)
		if parts[i] == "" {
			return nil, fmt.Errorf("item %d is empty", i+1)
		}
	}
	return parts, nil
}
