package config

import (
	"errors"
	"strings"
	"testing"
)

// hostnameFails stands in for a machine whose host name cannot be read; a
// test passing it also proves the host name is not read when not needed.
func hostnameFails(s *settings) {
	s.hostname = func() (string, error) { return "", errors.New("no host name") }
}

func TestNodeIDSource(t *testing.T) {
	ordinal := map[string]string{"node.id.source": "hostname-ordinal"}
	tests := []struct {
		name    string
		props   map[string]string
		opt     Option
		wantID  int32
		wantErr []string // substrings of the error; nil means success
	}{
		{"default source ignores the host", nil, hostnameFails, 1, nil},
		{"config source uses node.id", map[string]string{"node.id.source": "config", "node.id": "7"}, hostnameFails, 7, nil},
		{"first pod is node 1", ordinal, WithHostname("skein-0"), 1, nil},
		{"third pod is node 3", ordinal, WithHostname("skein-2"), 3, nil},
		{"dashes in the set name", ordinal, WithHostname("my-kafka-set-12"), 13, nil},
		{"only the first DNS label", ordinal, WithHostname("skein-4.skein-headless.default.svc"), 5, nil},
		{"leading zeros", ordinal, WithHostname("skein-007"), 8, nil},
		{"largest ordinal", ordinal, WithHostname("skein-2147483646"), 2147483647, nil},
		{"no dash", ordinal, WithHostname("skein"), 0, []string{"node.id.source", `"skein"`, "-<ordinal>"}},
		{"nothing after the dash", ordinal, WithHostname("skein-"), 0, []string{`"skein-"`, "-<ordinal>"}},
		{"letters after the dash", ordinal, WithHostname("skein-1a"), 0, []string{`"skein-1a"`, "-<ordinal>"}},
		{"dash only in a later label", ordinal, WithHostname("skein.pod-0"), 0, []string{`"skein.pod-0"`, "-<ordinal>"}},
		{"empty host name", ordinal, WithHostname(""), 0, []string{`""`, "-<ordinal>"}},
		{"ordinal too large", ordinal, WithHostname("skein-2147483647"), 0, []string{"too large", "2147483646"}},
		{"ordinal beyond int64", ordinal, WithHostname("skein-99999999999999999999"), 0, []string{"too large"}},
		{"too many digits", ordinal, WithHostname("skein-12345678901"), 0, []string{`"skein-12345678901"`, "too large"}},
		{"host name unreadable", ordinal, hostnameFails, 0, []string{"node.id.source", "no host name"}},
		{"node.id also set", map[string]string{"node.id.source": "hostname-ordinal", "node.id": "2"}, WithHostname("skein-0"),
			0, []string{"node.id.source", "node.id=\"2\"", "one place"}},
		{"unknown source", map[string]string{"node.id.source": "pod-name"}, WithHostname("skein-0"),
			0, []string{"node.id.source", "config, hostname-ordinal"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := NewBroker(tt.props, tt.opt)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("NewBroker succeeded with node.id %d; want an error mentioning %q", b.NodeID, tt.wantErr)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not mention %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("NewBroker: %v", err)
			}
			if b.NodeID != tt.wantID {
				t.Errorf("NodeID = %d, want %d", b.NodeID, tt.wantID)
			}
		})
	}
}

// TestNodeIDSourceConflictNamesOrigin checks that, whichever source sets
// node.id next to hostname-ordinal, the error says where.
func TestNodeIDSourceConflictNamesOrigin(t *testing.T) {
	tests := []struct {
		name      string
		file      string
		env       []string
		overrides map[string]string
		wantIn    string
	}{
		{"file", "node.id=3\n", []string{"SKEIN_NODE_ID_SOURCE=hostname-ordinal"}, nil, "server.properties:1"},
		{"environment", "node.id.source=hostname-ordinal\n", []string{"SKEIN_NODE_ID=3"}, nil, "environment variable SKEIN_NODE_ID"},
		{"flag", "", []string{"SKEIN_NODE_ID_SOURCE=hostname-ordinal"}, map[string]string{"node.id": "3"}, "command-line override"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeFile(t, tt.file), tt.env, tt.overrides, WithHostname("skein-0"))
			if err == nil {
				t.Fatal("Load accepted node.id together with node.id.source=hostname-ordinal")
			}
			for _, want := range []string{"node.id.source", `node.id="3"`, tt.wantIn} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

// TestNodeIDSourceDerivedValueIsVisible checks that a derived node.id is
// reported like an explicit one, and that rules about node.id name the
// host name it came from.
func TestNodeIDSourceDerivedValueIsVisible(t *testing.T) {
	b, err := Load("", []string{"SKEIN_NODE_ID_SOURCE=hostname-ordinal"}, nil, WithHostname("skein-1"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if b.Raw["node.id"] != "2" || !strings.Contains(b.Origin("node.id"), `"skein-1"`) {
		t.Errorf("Raw node.id %q from %q; want 2 from host name skein-1", b.Raw["node.id"], b.Origin("node.id"))
	}
	for _, e := range DescribeBroker(b, Dynamic{}) {
		if e.Name == "node.id" && (e.Value != "2" || e.Source != SourceStaticBroker) {
			t.Errorf("DescribeBroker node.id = %q (%s), want 2 (STATIC_BROKER_CONFIG)", e.Value, e.Source)
		}
	}

	_, err = Load("", []string{
		"SKEIN_NODE_ID_SOURCE=hostname-ordinal",
		"SKEIN_CONTROLLER_QUORUM_VOTERS=1@127.0.0.1:9093",
	}, nil, WithHostname("skein-1"))
	if err == nil || !strings.Contains(err.Error(), "node.id") || !strings.Contains(err.Error(), `"skein-1"`) {
		t.Errorf("a derived id outside the voters: error %v, want one naming node.id and the host name skein-1", err)
	}
}
