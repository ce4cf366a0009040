package config

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func mustBroker(t *testing.T, props map[string]string) *Broker {
	t.Helper()
	b, err := NewBroker(props)
	if err != nil {
		t.Fatalf("NewBroker(%v): %v", props, err)
	}
	return b
}

func TestRetentionPrecedence(t *testing.T) {
	tests := []struct {
		name      string
		broker    map[string]string
		overrides map[string]string
		want      int64
	}{
		{"default is 168 hours", nil, nil, 604800000},
		{"hours", map[string]string{"log.retention.hours": "1"}, nil, 3600000},
		{"minutes beat hours", map[string]string{"log.retention.hours": "1", "log.retention.minutes": "2"}, nil, 120000},
		{"ms beat minutes and hours", map[string]string{"log.retention.hours": "1", "log.retention.minutes": "2", "log.retention.ms": "5"}, nil, 5},
		{"empty ms is unset", map[string]string{"log.retention.ms": "", "log.retention.minutes": "2"}, nil, 120000},
		{"-1 ms is forever", map[string]string{"log.retention.ms": "-1"}, nil, -1},
		{"-1 hours is forever, not -3600000", map[string]string{"log.retention.hours": "-1"}, nil, -1},
		{"-1 minutes is forever", map[string]string{"log.retention.minutes": "-1"}, nil, -1},
		{"topic override beats everything", map[string]string{"log.retention.ms": "5"}, map[string]string{"retention.ms": "7"}, 7},
		{"topic override -1", nil, map[string]string{"retention.ms": "-1"}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ResolveTopic(mustBroker(t, tt.broker), tt.overrides)
			if err != nil {
				t.Fatalf("ResolveTopic: %v", err)
			}
			if cfg.RetentionMs != tt.want {
				t.Errorf("RetentionMs = %d, want %d", cfg.RetentionMs, tt.want)
			}
		})
	}
}

// Kafka's precedence is by name, not by source: log.retention.ms from the
// file still beats log.retention.hours from a flag.
func TestRetentionPrecedenceAcrossSources(t *testing.T) {
	file := writeFile(t, "log.retention.ms=5000\n")
	b, err := Load(file, []string{"SKEIN_LOG_RETENTION_MINUTES=3"}, map[string]string{"log.retention.hours": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if b.TopicDefaults.RetentionMs != 5000 {
		t.Errorf("RetentionMs = %d, want 5000", b.TopicDefaults.RetentionMs)
	}
}

func TestSegmentRollPrecedence(t *testing.T) {
	tests := []struct {
		broker map[string]string
		want   int64
	}{
		{nil, 168 * 3600000},
		{map[string]string{"log.roll.hours": "2"}, 7200000},
		{map[string]string{"log.roll.hours": "2", "log.roll.ms": "5"}, 5},
	}
	for _, tt := range tests {
		if got := mustBroker(t, tt.broker).TopicDefaults.SegmentMs; got != tt.want {
			t.Errorf("%v: SegmentMs = %d, want %d", tt.broker, got, tt.want)
		}
	}
}

func TestResolveTopicSynonyms(t *testing.T) {
	b := mustBroker(t, map[string]string{
		"log.segment.bytes":                   "1048576",
		"message.max.bytes":                   "2000000",
		"log.cleanup.policy":                  "compact",
		"log.message.timestamp.type":          "LogAppendTime",
		"log.flush.interval.messages":         "10",
		"log.flush.interval.ms":               "20",
		"log.index.interval.bytes":            "8192",
		"log.index.size.max.bytes":            "4096",
		"log.retention.bytes":                 "100000",
		"min.insync.replicas":                 "2",
		"unclean.leader.election.enable":      "true",
		"write.caching":                       "true",
		"compression.type":                    "lz4",
		"log.cleaner.delete.retention.ms":     "5",
		"log.cleaner.min.cleanable.ratio":     "0.25",
		"log.cleaner.min.compaction.lag.ms":   "9",
		"log.cleaner.max.compaction.lag.ms":   "7",
		"log.message.timestamp.before.max.ms": "11",
		"log.message.timestamp.after.max.ms":  "12",
	})
	want := TopicConfig{
		CleanupPolicy: []string{"compact"}, CompressionType: "lz4", FlushMessages: 10, FlushMs: 20,
		IndexIntervalBytes: 8192, MaxMessageBytes: 2000000, MessageTimestampType: "LogAppendTime",
		MessageTimestampBeforeMaxMs: 11, MessageTimestampAfterMaxMs: 12,
		MinInsyncReplicas: 2, RetentionBytes: 100000, RetentionMs: 604800000, SegmentBytes: 1048576,
		SegmentIndexBytes: 4096, SegmentMs: 604800000, UncleanLeaderElection: true, WriteCaching: true,
		DeleteRetentionMs: 5, MinCleanableDirtyRatio: 0.25, MinCompactionLagMs: 9, MaxCompactionLagMs: 7,
	}
	got, err := ResolveTopic(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("broker defaults:\n got  %+v\n want %+v", got, want)
	}

	overrides := map[string]string{
		"cleanup.policy": "compact, delete", "compression.type": "producer", "flush.messages": "1",
		"flush.ms": "0", "index.interval.bytes": "0", "max.message.bytes": "100",
		"message.timestamp.type": "CreateTime", "min.insync.replicas": "3", "retention.bytes": "-1",
		"retention.ms": "1000", "segment.bytes": "14", "segment.index.bytes": "4", "segment.ms": "1",
		"unclean.leader.election.enable": "false", "write.caching": "FALSE",
		"delete.retention.ms": "0", "min.cleanable.dirty.ratio": "1", "min.compaction.lag.ms": "100",
		"max.compaction.lag.ms":           "200",
		"message.timestamp.before.max.ms": "0", "message.timestamp.after.max.ms": "9223372036854775807",
	}
	want = TopicConfig{
		CleanupPolicy: []string{"compact", "delete"}, CompressionType: "producer", FlushMessages: 1, FlushMs: 0,
		IndexIntervalBytes: 0, MaxMessageBytes: 100, MessageTimestampType: "CreateTime",
		MessageTimestampBeforeMaxMs: 0, MessageTimestampAfterMaxMs: math.MaxInt64,
		MinInsyncReplicas: 3, RetentionBytes: -1, RetentionMs: 1000, SegmentBytes: 14,
		SegmentIndexBytes: 4, SegmentMs: 1, UncleanLeaderElection: false, WriteCaching: false,
		DeleteRetentionMs: 0, MinCleanableDirtyRatio: 1, MinCompactionLagMs: 100, MaxCompactionLagMs: 200,
	}
	got, err = ResolveTopic(b, overrides)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("overrides:\n got  %+v\n want %+v", got, want)
	}
	if !got.Compact() || !got.Delete() {
		t.Errorf("Compact() = %v, Delete() = %v, want both true", got.Compact(), got.Delete())
	}
}

func TestValidateTopicOverrides(t *testing.T) {
	tests := []struct {
		name      string
		overrides map[string]string
		want      string // "" for valid
	}{
		{"none", nil, ""},
		{"valid", map[string]string{"retention.ms": "86400000", "cleanup.policy": "compact"}, ""},
		{
			"bad number", map[string]string{"segment.bytes": "10"},
			`config: segment.bytes="10": must be an integer of at least 14`,
		},
		{
			"empty number", map[string]string{"retention.ms": ""},
			`config: retention.ms="": must be a number of milliseconds of at least -1`,
		},
		{
			"bad enum", map[string]string{"message.timestamp.type": "createtime"},
			`config: message.timestamp.type="createtime": must be one of CreateTime, LogAppendTime`,
		},
		{
			"bad list item", map[string]string{"cleanup.policy": "delete,archive"},
			`config: cleanup.policy="delete,archive": must be a non-empty comma-separated list of delete, compact: "archive" is not allowed`,
		},
		{"valid ratio", map[string]string{"min.cleanable.dirty.ratio": "0.05"}, ""},
		{
			"ratio above 1", map[string]string{"min.cleanable.dirty.ratio": "1.5"},
			`config: min.cleanable.dirty.ratio="1.5": must be a number between 0 and 1`,
		},
		{
			"ratio not a number", map[string]string{"min.cleanable.dirty.ratio": "NaN"},
			`config: min.cleanable.dirty.ratio="NaN": must be a number between 0 and 1`,
		},
		{
			"bad bool", map[string]string{"write.caching": "on"},
			`config: write.caching="on": must be true or false`,
		},
		{
			"broker name instead of topic name", map[string]string{"log.retention.ms": "1"},
			`config: unknown property "log.retention.ms": that is the broker-wide name; the topic property is retention.ms`,
		},
		{
			"broker-only property", map[string]string{"num.partitions": "1"},
			`config: unknown property "num.partitions": that is a broker property, not settable per topic`,
		},
		{
			"typo", map[string]string{"retention.mss": "1"},
			`config: unknown property "retention.mss": did you mean retention.ms?`,
		},
		{
			"first bad key in sorted order", map[string]string{"zz": "1", "aa": "1"},
			`config: unknown property "aa"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateTopicOverrides(tt.overrides)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Errorf("error\n got  %v\n want %s", err, tt.want)
			}
		})
	}
	if _, err := ResolveTopic(mustBroker(t, nil), map[string]string{"segment.bytes": "1"}); err == nil {
		t.Error("ResolveTopic accepted an invalid override")
	}
}

func findEntry(t *testing.T, entries []ConfigEntry, name string) ConfigEntry {
	t.Helper()
	for _, e := range entries {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no entry %s", name)
	return ConfigEntry{}
}

func TestDescribeTopic(t *testing.T) {
	b := mustBroker(t, map[string]string{"log.retention.minutes": "60", "log.segment.bytes": "1048576"})
	entries, err := DescribeTopic(b, map[string]string{"retention.ms": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(TopicPropertyNames()) {
		t.Errorf("%d entries, want one per topic property (%d)", len(entries), len(TopicPropertyNames()))
	}
	tests := []struct {
		name     string
		value    string
		source   ConfigSource
		synonyms []ConfigSynonym
	}{
		{
			"retention.ms", "1000", SourceDynamicTopic, []ConfigSynonym{
				{"retention.ms", "1000", SourceDynamicTopic},
				{"log.retention.minutes", "60", SourceStaticBroker},
				{"log.retention.hours", "168", SourceDefault},
			},
		},
		{
			"segment.bytes", "1048576", SourceStaticBroker, []ConfigSynonym{
				{"log.segment.bytes", "1048576", SourceStaticBroker},
				{"log.segment.bytes", "1073741824", SourceDefault},
			},
		},
		{
			"max.message.bytes", "1048588", SourceDefault, []ConfigSynonym{
				{"message.max.bytes", "1048588", SourceDefault},
			},
		},
		{
			"segment.ms", "604800000", SourceDefault, []ConfigSynonym{
				{"log.roll.hours", "168", SourceDefault},
			},
		},
	}
	for _, tt := range tests {
		e := findEntry(t, entries, tt.name)
		if e.Value != tt.value || e.Source != tt.source || !reflect.DeepEqual(e.Synonyms, tt.synonyms) {
			t.Errorf("%s = %q from %v, synonyms %v\n want %q from %v, synonyms %v",
				tt.name, e.Value, e.Source, e.Synonyms, tt.value, tt.source, tt.synonyms)
		}
		if e.ReadOnly || e.Doc == "" {
			t.Errorf("%s: ReadOnly=%v Doc=%q", tt.name, e.ReadOnly, e.Doc)
		}
	}
	if e := findEntry(t, entries, "retention.bytes"); e.Type != ConfigTypeLong {
		t.Errorf("retention.bytes type %d, want LONG", e.Type)
	}
	if _, err := DescribeTopic(b, map[string]string{"bogus": "1"}); err == nil {
		t.Error("DescribeTopic accepted an unknown override")
	}
}

func TestDescribeBroker(t *testing.T) {
	b := mustBroker(t, map[string]string{"node.id": "1", "log.retention.hours": "24"})
	entries := DescribeBroker(b, Dynamic{})
	tests := []struct {
		name   string
		value  string
		source ConfigSource
	}{
		{"node.id", "1", SourceStaticBroker},
		{"num.partitions", "1", SourceDefault},
		{"log.retention.ms", "86400000", SourceStaticBroker},
		{"log.retention.hours", "24", SourceStaticBroker},
		{"cluster.id", "", SourceDefault},
		{"num.io.threads", "8", SourceDefault},
	}
	for _, tt := range tests {
		e := findEntry(t, entries, tt.name)
		if e.Value != tt.value || e.Source != tt.source || !e.ReadOnly {
			t.Errorf("%s = %q from %v (read-only %v), want %q from %v", tt.name, e.Value, e.Source, e.ReadOnly, tt.value, tt.source)
		}
		if len(e.Synonyms) == 0 || e.Synonyms[0].Source != tt.source {
			t.Errorf("%s: synonyms %v do not start with the entry's source", tt.name, e.Synonyms)
		}
	}
	for i := 1; i < len(entries); i++ {
		if strings.Compare(entries[i-1].Name, entries[i].Name) >= 0 {
			t.Fatalf("entries not sorted: %s before %s", entries[i-1].Name, entries[i].Name)
		}
	}
	if got := SourceStaticBroker.String(); got != "STATIC_BROKER_CONFIG" {
		t.Errorf("SourceStaticBroker.String() = %s", got)
	}
}

// TestThrottledReplicasOverrides: the throttled-replicas lists are topic
// overrides with no broker synonym; "*" and partition:broker lists are
// accepted, anything else refused, and DescribeTopic shows them.
func TestThrottledReplicasOverrides(t *testing.T) {
	for _, key := range []string{"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"} {
		for _, ok := range []string{"", "*", "0:1", "0:1,1:2, 2:3"} {
			if err := ValidateTopicOverrides(map[string]string{key: ok}); err != nil {
				t.Errorf("%s=%q refused: %v", key, ok, err)
			}
		}
		for _, bad := range []string{"0", "a:1", "0:-1", "*,0:1", "0:1,"} {
			if err := ValidateTopicOverrides(map[string]string{key: bad}); err == nil {
				t.Errorf("%s=%q accepted", key, bad)
			}
		}
	}
	b := mustBroker(t, nil)
	entries, err := DescribeTopic(b, map[string]string{"leader.replication.throttled.replicas": "0:1"})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range entries {
		switch e.Name {
		case "leader.replication.throttled.replicas":
			seen++
			if e.Value != "0:1" || e.Source != SourceDynamicTopic {
				t.Errorf("leader list described as %+v", e)
			}
		case "follower.replication.throttled.replicas":
			seen++
			if e.Value != "" || e.Source != SourceDefault || len(e.Synonyms) != 1 || e.Synonyms[0].Name != e.Name {
				t.Errorf("unset follower list described as %+v", e)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("DescribeTopic lists %d of the two throttled-replicas lists", seen)
	}
}
