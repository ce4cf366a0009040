package config

import "fmt"

// Kind is how a property's text is interpreted.
type Kind int

const (
	KindInt        Kind = iota // 32-bit signed integer
	KindShort                  // 16-bit signed integer (replication factors, as in Kafka)
	KindLong                   // 64-bit signed integer
	KindDurationMs             // 64-bit count of milliseconds
	KindBool                   // true or false, any letter case
	KindString                 // free text, possibly checked by a property-specific rule
	KindEnum                   // exactly one of a fixed set of words
	KindList                   // comma-separated items, optionally from a fixed set
	KindDouble                 // a finite decimal number (Kafka's DOUBLE), bounded by Min and Max
)

// String names the kind as the reference documentation shows it.
func (k Kind) String() string {
	switch k {
	case KindInt:
		return "int"
	case KindShort:
		return "short"
	case KindLong:
		return "long"
	case KindDurationMs:
		return "duration (ms)"
	case KindBool:
		return "boolean"
	case KindString:
		return "string"
	case KindEnum:
		return "enum"
	case KindList:
		return "list"
	case KindDouble:
		return "double"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Kafka's DescribeConfigs ConfigType codes (KIP-569).
const (
	ConfigTypeBoolean int8 = 1
	ConfigTypeString  int8 = 2
	ConfigTypeInt     int8 = 3
	ConfigTypeShort   int8 = 4
	ConfigTypeLong    int8 = 5
	ConfigTypeDouble  int8 = 6
	ConfigTypeList    int8 = 7
)

// ConfigType is the code DescribeConfigs v3+ reports for this kind.
func (k Kind) ConfigType() int8 {
	switch k {
	case KindInt:
		return ConfigTypeInt
	case KindShort:
		return ConfigTypeShort
	case KindLong, KindDurationMs:
		return ConfigTypeLong
	case KindBool:
		return ConfigTypeBoolean
	case KindList:
		return ConfigTypeList
	case KindDouble:
		return ConfigTypeDouble
	}
	return ConfigTypeString
}

// bitSize is the width of an integer kind, 0 for the others.
func (k Kind) bitSize() int {
	switch k {
	case KindShort:
		return 16
	case KindInt:
		return 32
	case KindLong, KindDurationMs:
		return 64
	}
	return 0
}
