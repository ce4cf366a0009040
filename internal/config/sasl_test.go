package config

import (
	"maps"
	"strings"
	"testing"
	"time"
)

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-pw" user_admin="admin-pw" user_alice="alice-pw";`

func saslProps(extra map[string]string) map[string]string {
	p := map[string]string{
		"listeners":                      "PLAINTEXT://h:9092,SASL_PLAINTEXT://h:9094,INTERNAL://h:9095,CONTROLLER://h:9093",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":     "PLAINTEXT",
		"sasl.jaas.config":               plainJAAS,
	}
	maps.Copy(p, extra)
	return p
}

// TestSASLListeners: every SASL listener reads the broker-wide JAAS
// entry unless it has its own, as Kafka's listener.name.NAME.plain.sasl.jaas.config.
func TestSASLListeners(t *testing.T) {
	b, err := NewBroker(saslProps(map[string]string{
		"listener.name.internal.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_broker="broker-pw";`,
		"sasl.enabled.mechanisms":                       "PLAIN",
	}))
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := b.SASLOf("sasl_plaintext")
	internal, _ := b.SASLOf("INTERNAL")
	if !maps.Equal(pub.PlainUsers, map[string]string{"admin": "admin-pw", "alice": "alice-pw"}) {
		t.Errorf("SASL_PLAINTEXT users %v", pub.PlainUsers)
	}
	if !maps.Equal(internal.PlainUsers, map[string]string{"broker": "broker-pw"}) || len(internal.Mechanisms) != 1 {
		t.Errorf("INTERNAL %+v", internal)
	}
	if _, ok := b.SASLOf("PLAINTEXT"); ok {
		t.Error("PLAINTEXT listener has SASL settings")
	}
}

// SCRAM users come from the metadata: a SCRAM-only listener needs no JAAS
// config, and one with PLAIN still does.
func TestSASLScramWithoutJAAS(t *testing.T) {
	props := saslProps(map[string]string{"sasl.enabled.mechanisms": "SCRAM-SHA-512"})
	delete(props, "sasl.jaas.config")
	b, err := NewBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := b.SASLOf("SASL_PLAINTEXT")
	if !ok || len(s.Mechanisms) != 1 || s.Mechanisms[0] != "SCRAM-SHA-512" || len(s.PlainUsers) != 0 {
		t.Fatalf("SCRAM-only listener: %+v %v", s, ok)
	}
	props["sasl.enabled.mechanisms"] = "SCRAM-SHA-512,PLAIN"
	if _, err := NewBroker(props); err == nil {
		t.Fatal("PLAIN without a JAAS config accepted")
	}
}

func TestSASLRules(t *testing.T) {
	tests := []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"bad JAAS", map[string]string{"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="secret-pw"`},
			`config: sasl.jaas.config=(hidden): must be sasl.jaas.config: missing ';' at the end`},
		{"no users", map[string]string{"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="secret-pw";`},
			`config: sasl.jaas.config=(hidden): must be a PlainLoginModule entry with at least one user_NAME="password" option`},
		{"scoped on plaintext", map[string]string{"listener.name.plaintext.plain.sasl.jaas.config": plainJAAS},
			`config: listener.name.plaintext.plain.sasl.jaas.config=(hidden): must be set for a SASL listener only (PLAINTEXT uses PLAINTEXT)`},
		{"GSSAPI not served", map[string]string{"sasl.enabled.mechanisms": "SCRAM-SHA-512,GSSAPI"},
			`config: sasl.enabled.mechanisms="SCRAM-SHA-512,GSSAPI": must be a non-empty comma-separated list of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER: "GSSAPI" is not allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewBroker(saslProps(tt.props))
			if err == nil {
				t.Fatal("NewBroker succeeded")
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got  %s\n want %s", err, tt.want)
			}
			if strings.Contains(err.Error(), "pw") {
				t.Errorf("the error shows a password: %v", err)
			}
		})
	}
}

// TestReauthLifetimes: connections.max.reauth.ms reaches every SASL
// listener and enabled mechanism, and Kafka's listener-scoped and
// listener-and-mechanism-scoped forms win over it, the most specific first.
func TestReauthLifetimes(t *testing.T) {
	b, err := NewBroker(saslProps(map[string]string{
		"sasl.enabled.mechanisms":                                        "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"connections.max.reauth.ms":                                      "60000",
		"listener.name.internal.connections.max.reauth.ms":               "30000",
		"listener.name.internal.scram-sha-512.connections.max.reauth.ms": "5000",
		"listener.name.sasl_plaintext.plain.connections.max.reauth.ms":   "0",
	}))
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := b.SASLOf("SASL_PLAINTEXT")
	internal, _ := b.SASLOf("INTERNAL")
	want := map[string]map[string]time.Duration{
		"SASL_PLAINTEXT": {"PLAIN": 0, "SCRAM-SHA-256": time.Minute, "SCRAM-SHA-512": time.Minute},
		"INTERNAL":       {"PLAIN": 30 * time.Second, "SCRAM-SHA-256": 30 * time.Second, "SCRAM-SHA-512": 5 * time.Second},
	}
	if !maps.Equal(pub.MaxReauth, want["SASL_PLAINTEXT"]) || !maps.Equal(internal.MaxReauth, want["INTERNAL"]) {
		t.Fatalf("lifetimes %v and %v, want %v", pub.MaxReauth, internal.MaxReauth, want)
	}
	if d, _ := NewBroker(saslProps(nil)); d.ListenerSASL["SASL_PLAINTEXT"].MaxReauth["PLAIN"] != 0 {
		t.Error("logins expire by default")
	}
	for key, value := range map[string]string{
		"connections.max.reauth.ms":                                      "-1",
		"listener.name.plaintext.connections.max.reauth.ms":              "1000", // not a SASL listener
		"listener.name.nope.connections.max.reauth.ms":                   "1000",
		"listener.name.internal.scram-sha-512.connections.max.reauth.ms": "1000", // not enabled
		"listener.name.internal.plain.connections.max.reauth.ms":         "soon",
	} {
		if _, err := NewBroker(saslProps(map[string]string{key: value})); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: %v, want an error naming it", key, value, err)
		}
	}
}
