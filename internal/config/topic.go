package config

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// TopicConfig is the effective configuration of one topic: its overrides
// on top of the broker-wide defaults. Millisecond fields stay int64 because
// Kafka uses -1 (retention.ms: forever) and Long.MAX (flush.ms: never) as
// values, which a time.Duration cannot hold.
type TopicConfig struct {
	CleanupPolicy        []string // cleanup.policy: "delete", "compact" or both
	CompressionType      string   // compression.type
	FlushMessages        int64    // flush.messages
	FlushMs              int64    // flush.ms
	IndexIntervalBytes   int32    // index.interval.bytes
	MaxMessageBytes      int32    // max.message.bytes
	MessageTimestampType string   // message.timestamp.type: CreateTime or LogAppendTime
	// MessageTimestampBeforeMaxMs and AfterMaxMs bound how far a CreateTime
	// record's timestamp may lie behind or ahead of the broker's clock
	// (message.timestamp.before.max.ms / after.max.ms, KIP-937).
	MessageTimestampBeforeMaxMs int64
	MessageTimestampAfterMaxMs  int64
	MinInsyncReplicas           int32 // min.insync.replicas
	RetentionBytes              int64 // retention.bytes (-1 = no limit)
	RetentionMs                 int64 // retention.ms (-1 = forever)
	SegmentBytes                int32 // segment.bytes
	SegmentIndexBytes           int32 // segment.index.bytes
	SegmentMs                   int64 // segment.ms
	UncleanLeaderElection       bool  // unclean.leader.election.enable
	WriteCaching                bool  // write.caching (false = acks=all waits for fsync)

	DeleteRetentionMs      int64   // delete.retention.ms: how long tombstones outlive their first compaction
	MinCleanableDirtyRatio float64 // min.cleanable.dirty.ratio
	MinCompactionLagMs     int64   // min.compaction.lag.ms
	MaxCompactionLagMs     int64   // max.compaction.lag.ms
}

// Compact reports whether cleanup.policy includes compact.
func (t TopicConfig) Compact() bool { return slices.Contains(t.CleanupPolicy, "compact") }

// Delete reports whether cleanup.policy includes delete.
func (t TopicConfig) Delete() bool { return slices.Contains(t.CleanupPolicy, "delete") }

// ValidateTopicOverrides checks per-topic settings as CreateTopics,
// AlterConfigs and IncrementalAlterConfigs receive them, by topic-level name.
// The error is an *Error; the API layer answers INVALID_CONFIG with its text.
func ValidateTopicOverrides(overrides map[string]string) error {
	reg := theRegistry()
	for _, key := range slices.Sorted(maps.Keys(overrides)) {
		value := overrides[key]
		p, ok := reg.byTopic[key]
		if !ok {
			return unknownTopicKey(key)
		}
		// Unlike in a broker file, an empty number is not "unset" here:
		// deleting an override is the way to fall back to the broker value.
		if p.Kind.isNumeric() && strings.TrimSpace(value) == "" {
			return invalid(key, value, p.Allowed())
		}
		if reason, ok := p.Validate(value); !ok {
			return invalid(key, value, reason)
		}
	}
	return nil
}

// ResolveTopic computes a topic's effective configuration from its
// overrides (topic-level names) and the broker's defaults.
func ResolveTopic(b *Broker, overrides map[string]string) (TopicConfig, error) {
	if err := ValidateTopicOverrides(overrides); err != nil {
		return TopicConfig{}, err
	}
	values := make(map[string]string)
	for _, p := range theRegistry().all {
		if p.TopicName == "" {
			continue
		}
		if v, ok := overrides[p.TopicName]; ok {
			values[p.TopicName] = strings.TrimSpace(v)
		} else {
			v, _, _ := resolveBroker(b.Raw, p)
			values[p.TopicName] = strings.TrimSpace(v)
		}
	}
	t := topicReader{values: values}
	cfg := TopicConfig{
		CleanupPolicy:        t.list("cleanup.policy"),
		CompressionType:      values["compression.type"],
		FlushMessages:        t.integer("flush.messages", 64),
		FlushMs:              t.integer("flush.ms", 64),
		IndexIntervalBytes:   int32(t.integer("index.interval.bytes", 32)),
		MaxMessageBytes:      int32(t.integer("max.message.bytes", 32)),
		MessageTimestampType: values["message.timestamp.type"],

		MessageTimestampBeforeMaxMs: t.integer("message.timestamp.before.max.ms", 64),
		MessageTimestampAfterMaxMs:  t.integer("message.timestamp.after.max.ms", 64),
		MinInsyncReplicas:           int32(t.integer("min.insync.replicas", 32)),
		RetentionBytes:              t.integer("retention.bytes", 64),
		RetentionMs:                 t.integer("retention.ms", 64),
		SegmentBytes:                int32(t.integer("segment.bytes", 32)),
		SegmentIndexBytes:           int32(t.integer("segment.index.bytes", 32)),
		SegmentMs:                   t.integer("segment.ms", 64),
		UncleanLeaderElection:       t.bool("unclean.leader.election.enable"),
		WriteCaching:                t.bool("write.caching"),

		DeleteRetentionMs:      t.integer("delete.retention.ms", 64),
		MinCleanableDirtyRatio: t.float("min.cleanable.dirty.ratio"),
		MinCompactionLagMs:     t.integer("min.compaction.lag.ms", 64),
		MaxCompactionLagMs:     t.integer("max.compaction.lag.ms", 64),
	}
	if t.err != nil {
		return TopicConfig{}, t.err
	}
	return cfg, nil
}

// topicReader parses already validated topic values, keeping the first
// failure (which would mean a registry bug) as an error.
type topicReader struct {
	values map[string]string
	err    error
}

func (t *topicReader) integer(name string, bits int) int64 {
	n, err := strconv.ParseInt(t.values[name], 10, bits)
	if err != nil && t.err == nil {
		t.err = invalid(name, t.values[name], "an integer (internal: "+err.Error()+")")
	}
	return n
}

func (t *topicReader) float(name string) float64 {
	f, err := strconv.ParseFloat(t.values[name], 64)
	if err != nil && t.err == nil {
		t.err = invalid(name, t.values[name], "a number (internal: "+err.Error()+")")
	}
	return f
}

func (t *topicReader) bool(name string) bool {
	b, err := parseBool(t.values[name])
	if err != nil && t.err == nil {
		t.err = invalid(name, t.values[name], "true or false")
	}
	return b
}

func (t *topicReader) list(name string) []string {
	items, err := splitList(t.values[name])
	if err != nil && t.err == nil {
		t.err = invalid(name, t.values[name], "a comma-separated list: "+err.Error())
	}
	return items
}
