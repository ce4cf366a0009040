package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadDefaults(t *testing.T) {
	b, err := Load("", nil, nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	plain := Listener{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"}
	ctrl := Listener{Name: "CONTROLLER", Host: "127.0.0.1", Port: 9093, SecurityProtocol: "PLAINTEXT"}
	checks := []struct {
		name      string
		got, want any
	}{
		{"NodeID", b.NodeID, int32(1)},
		{"Roles", b.Roles, []string{"broker", "controller"}},
		{"Listeners", b.Listeners, []Listener{plain, ctrl}},
		{"AdvertisedListeners", b.AdvertisedListeners, []Listener{plain}},
		{"InterBrokerListenerName", b.InterBrokerListenerName, "PLAINTEXT"},
		{"ControllerListenerNames", b.ControllerListenerNames, []string{"CONTROLLER"}},
		{"ControllerQuorumVoters", b.ControllerQuorumVoters, []Voter{{ID: 1, Host: "127.0.0.1", Port: 9093}}},
		{"AdminListeners", len(b.AdminListeners), 0},
		{"LogDirs", b.LogDirs, []string{"/tmp/skein-logs"}},
		{"NumPartitions", b.NumPartitions, int32(1)},
		{"DefaultReplicationFactor", b.DefaultReplicationFactor, int16(1)},
		{"MinInsyncReplicas", b.MinInsyncReplicas, int32(1)},
		{"ReplicaLagTimeMax", b.ReplicaLagTimeMax, 30 * time.Second},
		{"BrokerSessionTimeout", b.BrokerSessionTimeout, 9 * time.Second},
		{"LeaderImbalanceCheckInterval", b.LeaderImbalanceCheckInterval, 300 * time.Second},
		{"OffsetsRetention", b.OffsetsRetention, 7 * 24 * time.Hour},
		{"OffsetsTopicReplicationFactor", b.OffsetsTopicReplicationFactor, int16(3)},
		{"OffsetsTopicNumPartitions", b.OffsetsTopicNumPartitions, int32(50)},
		{"SocketRequestMaxBytes", b.SocketRequestMaxBytes, int32(104857600)},
		{"MaxConnections", b.MaxConnections, 1000},
		{"AutoCreateTopicsEnable", b.AutoCreateTopicsEnable, true},
		{"LogFormat", b.LogFormat, "text"},
		{"Raw", len(b.Raw), 0},
		{"TopicDefaults.RetentionMs", b.TopicDefaults.RetentionMs, int64(604800000)},
		{"TopicDefaults.SegmentMs", b.TopicDefaults.SegmentMs, int64(604800000)},
		{"TopicDefaults.SegmentBytes", b.TopicDefaults.SegmentBytes, int32(1 << 30)},
		{"TopicDefaults.MaxMessageBytes", b.TopicDefaults.MaxMessageBytes, int32(1048588)},
		{"TopicDefaults.CleanupPolicy", b.TopicDefaults.CleanupPolicy, []string{"delete"}},
		{"TopicDefaults.WriteCaching", b.TopicDefaults.WriteCaching, false},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

func TestLoadPrecedence(t *testing.T) {
	file := writeFile(t, "num.partitions=2\n")
	tests := []struct {
		name      string
		path      string
		env       []string
		overrides map[string]string
		want      int32
	}{
		{"default", "", nil, nil, 1},
		{"file", file, nil, nil, 2},
		{"env beats file", file, []string{"SKEIN_NUM_PARTITIONS=3"}, nil, 3},
		{"flag beats env and file", file, []string{"SKEIN_NUM_PARTITIONS=3"}, map[string]string{"num.partitions": "4"}, 4},
		{"flag beats file", file, nil, map[string]string{"num.partitions": "4"}, 4},
		{"later env entry wins", "", []string{"SKEIN_NUM_PARTITIONS=3", "SKEIN_NUM_PARTITIONS=5"}, nil, 5},
		{"other variables ignored", file, []string{"PATH=/bin", "KAFKA_NUM_PARTITIONS=9", "NOEQUALS"}, nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load(tt.path, tt.env, tt.overrides)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if b.NumPartitions != tt.want {
				t.Errorf("NumPartitions = %d, want %d", b.NumPartitions, tt.want)
			}
		})
	}
}

func TestLoadOrigins(t *testing.T) {
	file := writeFile(t, "# comment\nlog.dirs=/data/a\nnum.partitions=2\n")
	b, err := Load(file, []string{"SKEIN_LOG_DIRS=/data/b , /data/c"}, map[string]string{"broker.rack": "r1"})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if want := []string{"/data/b", "/data/c"}; !reflect.DeepEqual(b.LogDirs, want) {
		t.Errorf("LogDirs = %v, want %v", b.LogDirs, want)
	}
	wantOrigins := map[string]string{
		"log.dirs":       "environment variable SKEIN_LOG_DIRS",
		"num.partitions": file + ":3",
		"broker.rack":    "command-line override",
		"node.id":        "",
	}
	for key, want := range wantOrigins {
		if got := b.Origin(key); got != want {
			t.Errorf("Origin(%s) = %q, want %q", key, got, want)
		}
	}
	wantRaw := map[string]string{"log.dirs": "/data/b , /data/c", "num.partitions": "2", "broker.rack": "r1"}
	if !reflect.DeepEqual(b.Raw, wantRaw) {
		t.Errorf("Raw = %v, want %v", b.Raw, wantRaw)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name      string
		file      string // written to a temp file when non-empty
		env       []string
		overrides map[string]string
		want      string // whole message; FILE stands for the file's path
	}{
		{
			name: "invalid value in file",
			file: "node.id=1\nnum.partitions=abc\n",
			want: `config: num.partitions="abc": must be an integer between 1 and 100000 (set in FILE:2)`,
		},
		{
			name: "invalid value in env",
			env:  []string{"SKEIN_AUTO_CREATE_TOPICS_ENABLE=yes"},
			want: `config: auto.create.topics.enable="yes": must be true or false (set in environment variable SKEIN_AUTO_CREATE_TOPICS_ENABLE)`,
		},
		{
			name:      "invalid value in flag",
			overrides: map[string]string{"log.format": "xml"},
			want:      `config: log.format="xml": must be one of text, json (set in command-line override)`,
		},
		{
			name: "typo gets a suggestion",
			file: "\nnum.partition=3\n",
			want: `config: unknown property "num.partition": did you mean num.partitions? (set in FILE:2)`,
		},
		{
			name: "topic name in broker file",
			file: "retention.ms=1000\n",
			want: `config: unknown property "retention.ms": that is a topic property; its broker-wide default is log.retention.ms (set in FILE:1)`,
		},
		{
			name: "replaced Kafka property",
			file: "zookeeper.connect=localhost:2181\n",
			want: `config: unknown property "zookeeper.connect": Skein needs no ZooKeeper: set process.roles and controller.quorum.voters (set in FILE:1)`,
		},
		{
			name: "unknown env variable",
			env:  []string{"SKEIN_NO_SUCH_THING=1"},
			want: `config: unknown property "no.such.thing" (set in environment variable SKEIN_NO_SUCH_THING)`,
		},
		{
			name:      "unknown flag",
			overrides: map[string]string{"b.unknown": "1", "a.unknown": "1"},
			want:      `config: unknown property "a.unknown" (set in command-line override)`,
		},
		{
			name: "bad escape",
			file: "a=\\uZZZZ\n",
			want: `config: FILE: line 1: malformed \u escape "\\uZZZZ"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.file != "" {
				path = writeFile(t, tt.file)
			}
			_, err := Load(path, tt.env, tt.overrides)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			want := strings.ReplaceAll(tt.want, "FILE", path)
			if err.Error() != want {
				t.Errorf("error\n got  %s\n want %s", err, want)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.properties"), nil, nil)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("error = %v, want one wrapping os.ErrNotExist", err)
	}
}

func TestLoadErrorIsTyped(t *testing.T) {
	_, err := Load("", nil, map[string]string{"num.partitions": "0"})
	var cfgErr *Error
	if !errors.As(err, &cfgErr) {
		t.Fatalf("error %v is not a *config.Error", err)
	}
	if cfgErr.Key != "num.partitions" || cfgErr.Value != "0" || cfgErr.Unknown {
		t.Errorf("got %+v", cfgErr)
	}
}

func TestEnvName(t *testing.T) {
	for name, want := range map[string]string{
		"log.dirs":                   "SKEIN_LOG_DIRS",
		"node.id":                    "SKEIN_NODE_ID",
		"inter.broker.listener.name": "SKEIN_INTER_BROKER_LISTENER_NAME",
	} {
		if got := EnvName(name); got != want {
			t.Errorf("EnvName(%s) = %s, want %s", name, got, want)
		}
	}
}

func TestParseOverride(t *testing.T) {
	tests := []struct {
		in, key, value string
		ok             bool
	}{
		{"num.partitions=3", "num.partitions", "3", true},
		{" log.dirs = /a,/b ", "log.dirs", "/a,/b", true},
		{"advertised.listeners=", "advertised.listeners", "", true},
		{"a=b=c", "a", "b=c", true},
		{"novalue", "", "", false},
		{"=3", "", "", false},
	}
	for _, tt := range tests {
		key, value, err := ParseOverride(tt.in)
		if (err == nil) != tt.ok || key != tt.key || value != tt.value {
			t.Errorf("ParseOverride(%q) = %q, %q, %v", tt.in, key, value, err)
		}
	}
}

func TestLogDirFallback(t *testing.T) {
	tests := []struct {
		props map[string]string
		want  []string
	}{
		{map[string]string{}, []string{"/tmp/skein-logs"}},
		{map[string]string{"log.dir": "/one"}, []string{"/one"}},
		{map[string]string{"log.dir": "/one", "log.dirs": "/a,/b"}, []string{"/a", "/b"}},
		{map[string]string{"log.dir": "/one", "log.dirs": ""}, []string{"/one"}},
	}
	for _, tt := range tests {
		b, err := NewBroker(tt.props)
		if err != nil {
			t.Fatalf("NewBroker(%v): %v", tt.props, err)
		}
		if !reflect.DeepEqual(b.LogDirs, tt.want) {
			t.Errorf("NewBroker(%v).LogDirs = %v, want %v", tt.props, b.LogDirs, tt.want)
		}
	}
}
