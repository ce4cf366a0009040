package config

import (
	"math"

	"github.com/skein-log/skein/internal/replthrottle"
)

// Millisecond scales for Kafka's retention and roll fallbacks.
const (
	msPerMinute = 60_000
	msPerHour   = 3_600_000
)

// topicProperties are the per-topic properties. Each has a broker synonym
// (Name) that sets the cluster-wide default, as in Kafka; properties that
// exist only to feed a fallback chain (log.retention.hours) sit here too
// because they belong to the same story.
var topicProperties = []Property{
	{
		Name: "log.cleanup.policy", TopicName: "cleanup.policy", Kind: KindList, Default: "delete",
		Values: []string{"delete", "compact"}, NonEmpty: true,
		Doc: "What happens to old segments: delete them past retention, compact them to the latest record per key, or both.",
	},
	{
		Name: "log.cleaner.delete.retention.ms", TopicName: "delete.retention.ms", Kind: KindDurationMs, Default: "86400000",
		Min: 0, Max: math.MaxInt64,
		Doc: "How long a tombstone (a null value) of a compacted topic is kept after its first compaction, so consumers reading from the start see deletions.",
	},
	{
		Name: "log.cleaner.min.cleanable.ratio", TopicName: "min.cleanable.dirty.ratio", Kind: KindDouble, Default: "0.5",
		Min: 0, Max: 1,
		Doc: "Compact a partition once its not yet compacted part is this share of its compactable bytes.",
	},
	{
		Name: "log.cleaner.min.compaction.lag.ms", TopicName: "min.compaction.lag.ms", Kind: KindDurationMs, Default: "0",
		Min: 0, Max: math.MaxInt64,
		Doc: "Records younger than this are never compacted (the segment holding them is left alone).",
	},
	{
		Name: "log.cleaner.max.compaction.lag.ms", TopicName: "max.compaction.lag.ms", Kind: KindDurationMs, Default: "9223372036854775807",
		Min: 1, Max: math.MaxInt64,
		Doc: "Compact a partition whatever its dirty ratio once its oldest not yet compacted record (in a sealed segment) is this old.",
	},
	{
		TopicName: "leader.replication.throttled.replicas", Kind: KindString, Default: "",
		format: `"*" or partition:broker,...`, check: checkBy(replthrottle.ParseReplicas),
		Doc: "Replicas whose leader throttles the replication traffic to followers out of the ISR to leader.replication.throttled.rate: partition:broker pairs naming the leader's broker, or * for all. kafka-reassign-partitions --throttle and skein partitions reassign --throttle set it.",
	},
	{
		TopicName: "follower.replication.throttled.replicas", Kind: KindString, Default: "",
		format: `"*" or partition:broker,...`, check: checkBy(replthrottle.ParseReplicas),
		Doc: "Replicas whose follower throttles its fetching, while out of the ISR, to follower.replication.throttled.rate: partition:broker pairs naming the follower's broker, or * for all.",
	},
	{
		Name: "compression.type", TopicName: "compression.type", Kind: KindEnum, Default: "producer",
		Values: []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"},
		Doc:    "Codec batches are stored with; producer keeps whatever codec the producer used.",
	},
	{
		Name: "log.flush.interval.messages", TopicName: "flush.messages", Kind: KindLong, Default: "9223372036854775807",
		Min: 1, Max: math.MaxInt64,
		Doc: "Fsync a partition after this many messages, even when no acks=all write waits for it.",
	},
	{
		Name: "log.flush.interval.ms", TopicName: "flush.ms", Kind: KindDurationMs, Default: "9223372036854775807",
		Min: 0, Max: math.MaxInt64,
		Doc: "Fsync a partition when its oldest unsynced message is this old, even when no acks=all write waits for it.",
	},
	{
		Name: "log.index.interval.bytes", TopicName: "index.interval.bytes", Kind: KindInt, Default: "4096",
		Min: 0, Max: math.MaxInt32,
		Doc: "Bytes of log between two entries of the offset and time indexes.",
	},
	{
		Name: "message.max.bytes", TopicName: "max.message.bytes", Kind: KindInt, Default: "1048588",
		Min: 0, Max: math.MaxInt32,
		Doc: "Largest record batch, after compression, a produce request may carry.",
	},
	{
		Name: "log.message.timestamp.type", TopicName: "message.timestamp.type", Kind: KindEnum, Default: "CreateTime",
		Values: []string{"CreateTime", "LogAppendTime"},
		Doc:    "Timestamp kept in batches: the producer's (CreateTime) or the leader's append time (LogAppendTime).",
	},
	{
		Name: "log.message.timestamp.before.max.ms", TopicName: "message.timestamp.before.max.ms", Kind: KindDurationMs, Default: "9223372036854775807",
		Min: 0, Max: math.MaxInt64,
		Doc: "With CreateTime, refuse (INVALID_TIMESTAMP) a record whose timestamp is more than this far behind the broker's clock.",
	},
	{
		Name: "log.message.timestamp.after.max.ms", TopicName: "message.timestamp.after.max.ms", Kind: KindDurationMs, Default: "3600000",
		Min: 0, Max: math.MaxInt64,
		Doc: "With CreateTime, refuse (INVALID_TIMESTAMP) a record whose timestamp is more than this far ahead of the broker's clock.",
	},
	{
		Name: "min.insync.replicas", TopicName: "min.insync.replicas", Kind: KindInt, Default: "1",
		Min: 1, Max: math.MaxInt32,
		Doc: "Fewest in-sync replicas an acks=all write needs; with fewer, produce fails with NOT_ENOUGH_REPLICAS.",
	},
	{
		Name: "log.retention.bytes", TopicName: "retention.bytes", Kind: KindLong, Default: "-1",
		Min: -1, Max: math.MaxInt64,
		Doc: "Delete a partition's oldest segments while it is larger than this; -1 means no size limit.",
	},
	{
		Name: "log.retention.ms", TopicName: "retention.ms", Kind: KindDurationMs,
		Min: -1, Max: math.MaxInt64,
		Fallbacks: []Fallback{{"log.retention.minutes", msPerMinute}, {"log.retention.hours", msPerHour}},
		Doc:       "Delete segments whose newest record is older than this; -1 keeps them forever. Unset: log.retention.minutes, then log.retention.hours.",
	},
	{
		Name: "log.retention.minutes", Kind: KindInt, Min: -1, Max: math.MaxInt32,
		Doc: "Retention in minutes, used when log.retention.ms is unset.",
	},
	{
		Name: "log.retention.hours", Kind: KindInt, Default: "168", Min: -1, Max: math.MaxInt32,
		Doc: "Retention in hours, used when log.retention.ms and log.retention.minutes are unset.",
	},
	{
		Name: "log.segment.bytes", TopicName: "segment.bytes", Kind: KindInt, Default: "1073741824",
		Min: 14, Max: math.MaxInt32,
		Doc: "Roll a new segment when the active one reaches this size.",
	},
	{
		Name: "log.index.size.max.bytes", TopicName: "segment.index.bytes", Kind: KindInt, Default: "10485760",
		Min: 4, Max: math.MaxInt32,
		Doc: "Largest offset or time index of one segment; the segment rolls when its index is full.",
	},
	{
		Name: "log.roll.ms", TopicName: "segment.ms", Kind: KindDurationMs,
		Min: 1, Max: math.MaxInt64,
		Fallbacks: []Fallback{{"log.roll.hours", msPerHour}},
		Doc:       "Roll a new segment after this long even if it is not full, so that retention can delete it. Unset: log.roll.hours.",
	},
	{
		Name: "log.roll.hours", Kind: KindInt, Default: "168", Min: 1, Max: math.MaxInt32,
		Doc: "Segment roll time in hours, used when log.roll.ms is unset.",
	},
	{
		Name: "unclean.leader.election.enable", TopicName: "unclean.leader.election.enable", Kind: KindBool, Default: "false",
		Doc: "Let a replica outside the ISR become leader when no ISR member is alive; acknowledged records may be lost.",
	},
	{
		Name: "write.caching", TopicName: "write.caching", Kind: KindBool, Default: "false",
		Doc: "Skein extension (Redpanda's name). false: acks=all completes only after every ISR member fsynced. true: after they received it.",
	},
}
