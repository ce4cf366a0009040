package config

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		property   string // broker name
		value      string
		ok         bool
		wantReason string // substring of the reason when !ok
	}{
		// int with a range
		{"num.partitions", "1", true, ""},
		{"num.partitions", " 100000 ", true, ""},
		{"num.partitions", "0", false, "an integer between 1 and 100000"},
		{"num.partitions", "100001", false, "an integer between 1 and 100000"},
		{"num.partitions", "abc", false, "an integer between 1 and 100000"},
		{"num.partitions", "1.5", false, "an integer between 1 and 100000"},
		{"num.partitions", "", false, "an integer between 1 and 100000"},
		// int with only a lower bound
		{"log.segment.bytes", "14", true, ""},
		{"log.segment.bytes", "13", false, "an integer of at least 14"},
		{"log.segment.bytes", "2147483648", false, "an integer of at least 14"},
		// short
		{"default.replication.factor", "3", true, ""},
		{"default.replication.factor", "129", false, "an integer between 1 and 128"},
		{"default.replication.factor", "70000", false, "an integer between 1 and 128"},
		// long
		{"log.retention.bytes", "-1", true, ""},
		{"log.retention.bytes", "9223372036854775807", true, ""},
		{"log.retention.bytes", "-2", false, "an integer of at least -1"},
		{"log.retention.bytes", "9223372036854775808", false, "an integer of at least -1"},
		// duration in milliseconds
		{"replica.lag.time.max.ms", "30000", true, ""},
		{"replica.lag.time.max.ms", "0", false, "a number of milliseconds of at least 1"},
		{"replica.lag.time.max.ms", "30s", false, "a number of milliseconds"},
		{"replica.lag.time.max.ms", "9223372036855", false, "a number of milliseconds"},
		// unset-able numbers (fallback chains)
		{"log.retention.ms", "", true, ""},
		{"log.retention.minutes", "", true, ""},
		{"log.retention.ms", "-1", true, ""},
		{"log.retention.ms", "-2", false, "a number of milliseconds of at least -1"},
		// bool
		{"auto.create.topics.enable", "true", true, ""},
		{"auto.create.topics.enable", "FALSE", true, ""},
		{"auto.create.topics.enable", "yes", false, "true or false"},
		{"auto.create.topics.enable", "1", false, "true or false"},
		// enum
		{"log.format", "json", true, ""},
		{"log.format", "JSON", false, "one of text, json"},
		{"log.message.timestamp.type", "LogAppendTime", true, ""},
		{"compression.type", "brotli", false, "one of uncompressed, zstd, lz4, snappy, gzip, producer"},
		// list from a fixed set
		{"process.roles", "broker", true, ""},
		{"process.roles", "controller, broker", true, ""},
		{"process.roles", "", false, "a non-empty comma-separated list of broker, controller"},
		{"process.roles", "broker,zookeeper", false, `"zookeeper" is not allowed`},
		{"process.roles", "broker,broker", false, `"broker" appears twice`},
		{"process.roles", "broker,,controller", false, "item 2 is empty"},
		{"log.cleanup.policy", "compact,delete", true, ""},
		{"log.cleanup.policy", "", false, "non-empty"},
		// lists with a format
		{"listeners", "PLAINTEXT://:9092", true, ""},
		{"listeners", "PLAINTEXT://[::1]:9092,CONTROLLER://127.0.0.1:0", true, ""},
		{"listeners", "localhost:9092", false, "NAME://host:port: \"localhost:9092\": expected NAME://host:port"},
		{"listeners", "A://h:99999", false, "port must be between 0 and 65535"},
		{"listeners", "A://h:1,a://h:2", false, "listener name A appears twice"},
		{"listeners", "A-B://h:1", false, "letters, digits and underscores"},
		{"controller.quorum.voters", "1@h:9093,2@h:9193", true, ""},
		{"controller.quorum.voters", "1@h:9093,1@g:9093", false, "voter id 1 appears twice"},
		{"controller.quorum.voters", "x@h:9093", false, "non-negative integer"},
		{"controller.quorum.voters", "1@:9093", false, "voter host must not be empty"},
		{"controller.quorum.voters", "1@h:0", false, "port must be between 1 and 65535"},
		{"controller.quorum.voters", "h:9093", false, "expected id@host:port"},
		{"listener.security.protocol.map", "A:PLAINTEXT,b:ssl", true, ""},
		{"listener.security.protocol.map", "A:TLS", false, "protocol must be one of"},
		{"listener.security.protocol.map", "A", false, "expected LISTENER:PROTOCOL"},
		{"listener.security.protocol.map", "A:SSL,a:SSL", false, "mapped twice"},
		{"admin.listeners", "http://127.0.0.1:9644", true, ""},
		{"admin.listeners", "", true, ""},
		{"admin.listeners", "https://127.0.0.1:9644", false, "expected http://host:port"},
		{"controller.listener.names", "CONTROLLER,C2", true, ""},
		{"controller.listener.names", "CON TROLLER", false, "not a listener name"},
		{"log.dirs", "/a,/b", true, ""},
		{"log.dirs", "/a,/a/", false, `"/a/" appears twice`},
		{"log.dirs", "/a,/b\x01", false, "control character"},
		// strings with a rule
		{"cluster.id", "MkU3OEVBNTcwNTJENDM2Qk", true, ""},
		{"cluster.id", "", true, ""},
		{"cluster.id", "has space", false, "up to 64 letters"},
		{"cluster.id", strings.Repeat("a", 65), false, "up to 64 letters"},
		{"broker.rack", "eu-west-1a", true, ""},
		{"broker.rack", strings.Repeat("r", 256), false, "too long"},
		{"inter.broker.listener.name", "", true, ""},
		{"inter.broker.listener.name", "IN:TERNAL", false, "not a listener name"},
		{"log.dir", "", false, "a directory: empty path"},
		// every value is bounded
		{"log.dirs", strings.Repeat("/d", maxValueLen), false, "at most 16384 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.property+"="+truncate(tt.value), func(t *testing.T) {
			p, found := LookupBroker(tt.property)
			if !found {
				t.Fatalf("no property %s", tt.property)
			}
			reason, ok := p.Validate(tt.value)
			if ok != tt.ok {
				t.Fatalf("Validate(%q) ok=%v (reason %q), want %v", tt.value, ok, reason, tt.ok)
			}
			if !ok && !strings.Contains(reason, tt.wantReason) {
				t.Errorf("reason %q, want it to contain %q", reason, tt.wantReason)
			}
		})
	}
}

func truncate(s string) string {
	if len(s) > 20 {
		return s[:20] + "..."
	}
	return s
}

func TestErrorMessages(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{
			&Error{Key: "num.partitions", Value: "abc", Reason: "an integer between 1 and 100000"},
			`config: num.partitions="abc": must be an integer between 1 and 100000`,
		},
		{
			&Error{Key: "num.partitions", Value: "abc", Reason: "an integer between 1 and 100000", Origin: "f:3"},
			`config: num.partitions="abc": must be an integer between 1 and 100000 (set in f:3)`,
		},
		{&Error{Key: "x", Unknown: true}, `config: unknown property "x"`},
		{
			&Error{Key: "x", Unknown: true, Reason: "did you mean y?", Origin: "environment variable SKEIN_X"},
			`config: unknown property "x": did you mean y? (set in environment variable SKEIN_X)`,
		},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "abc", 0},
		{"num.partition", "num.partitions", 1},
		{"nmu.partitions", "num.partitions", 2},
		{"kitten", "sitting", 3},
		{"a", "abcdef", 3}, // capped
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b, 3); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
