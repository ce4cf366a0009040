package config

import (
	"maps"
	"reflect"
	"strings"
	"testing"
)

// sslProps is a broker with one SSL listener besides PLAINTEXT.
func sslProps(extra map[string]string) map[string]string {
	p := map[string]string{
		"listeners":                  "PLAINTEXT://h:9092,SSL://h:9094,CONTROLLER://h:9093",
		"inter.broker.listener.name": "PLAINTEXT",
		"ssl.keystore.location":      "/etc/skein/broker.pem",
	}
	maps.Copy(p, extra)
	return p
}

// TestTLSPropertiesReachListener changes each ssl.* property in turn on a
// broker with an SSL listener and checks that listener's settings change.
func TestTLSPropertiesReachListener(t *testing.T) {
	trust := map[string]string{"ssl.truststore.location": "/ca.pem"}
	changed := map[string]map[string]string{
		"ssl.keystore.location":          {"ssl.keystore.location": "/other.pem"},
		"ssl.keystore.certificate.chain": {"ssl.keystore.location": "", "ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----", "ssl.keystore.key": "k"},
		"ssl.keystore.key":               {"ssl.keystore.location": "", "ssl.keystore.certificate.chain": "c", "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----"},
		"ssl.truststore.location":        trust,
		"ssl.truststore.certificates":    {"ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----"},
		"ssl.client.auth":                {"ssl.client.auth": "required", "ssl.truststore.location": "/ca.pem"},
		"ssl.enabled.protocols":          {"ssl.enabled.protocols": "TLSv1.3"},
		"ssl.cipher.suites":              {"ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
		"ssl.handshake.timeout.ms":       {"ssl.handshake.timeout.ms": "5"},
		"ssl.principal.mapping.rules":    {"ssl.principal.mapping.rules": "RULE:^CN=([^,]*).*$/$1/L,DEFAULT"},
	}
	// Single-valued: present so that a JKS or PKCS12 store is refused by
	// name rather than read as garbage.
	singleValued := map[string]bool{"ssl.keystore.type": true, "ssl.truststore.type": true}
	base, err := NewBroker(sslProps(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range Properties() {
		if !strings.HasPrefix(p.Name, "ssl.") || singleValued[p.Name] {
			continue
		}
		props, ok := changed[p.Name]
		if !ok {
			t.Errorf("%s: no test value", p.Name)
			continue
		}
		b, err := NewBroker(sslProps(props))
		if err != nil {
			t.Errorf("%s: %v", p.Name, err)
			continue
		}
		if reflect.DeepEqual(b.ListenerTLS, base.ListenerTLS) && b.HandshakeTimeout == base.HandshakeTimeout {
			t.Errorf("%s changes nothing in the SSL listener", p.Name)
		}
	}
}

func TestListenerScopedTLS(t *testing.T) {
	b, err := NewBroker(sslProps(map[string]string{
		"listeners":                                      "PLAINTEXT://h:9092,SSL://h:9094,INTERNAL://h:9095,CONTROLLER://h:9093",
		"listener.security.protocol.map":                 "PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:SSL,CONTROLLER:PLAINTEXT",
		"listener.name.internal.ssl.client.auth":         "required",
		"listener.name.internal.ssl.truststore.location": "/internal-ca.pem",
	}))
	if err != nil {
		t.Fatal(err)
	}
	ssl, _ := b.TLSOf("ssl")
	internal, _ := b.TLSOf("INTERNAL")
	if ssl.ClientAuth != "none" || ssl.TruststoreLocation != "" {
		t.Errorf("SSL listener took INTERNAL's overrides: %+v", ssl)
	}
	if internal.ClientAuth != "required" || internal.TruststoreLocation != "/internal-ca.pem" || internal.KeystoreLocation != "/etc/skein/broker.pem" {
		t.Errorf("INTERNAL listener: %+v", internal)
	}
	if _, ok := b.TLSOf("PLAINTEXT"); ok {
		t.Error("PLAINTEXT listener has TLS settings")
	}
}

func TestTLSRules(t *testing.T) {
	tests := []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"both key stores", map[string]string{"ssl.keystore.certificate.chain": "c", "ssl.keystore.key": "k"},
			`config: ssl.keystore.location="/etc/skein/broker.pem": must be unset when ssl.keystore.certificate.chain or ssl.keystore.key is set (one key store, not two)`},
		{"chain without key", map[string]string{"ssl.keystore.location": "", "ssl.keystore.certificate.chain": "c"},
			`config: ssl.keystore.certificate.chain="c": must be set together with ssl.keystore.key`},
		{"client auth without trust store", map[string]string{"ssl.client.auth": "requested"},
			`config: ssl.client.auth="requested": must be none unless a trust store (ssl.truststore.location or ssl.truststore.certificates) says which client certificates SSL trusts`},
		{"JKS", map[string]string{"ssl.keystore.type": "JKS"},
			`config: ssl.keystore.type="JKS": must be one of PEM`},
		{"bad mapping rule", map[string]string{"ssl.principal.mapping.rules": "RULE:x"},
			`config: ssl.principal.mapping.rules="RULE:x": must be DEFAULT or RULE:pattern/replacement/[LU], comma-separated: ssl.principal.mapping.rules: "RULE:x" is not DEFAULT or RULE:pattern/replacement/[LU]`},
		{"TLS 1.1", map[string]string{"ssl.enabled.protocols": "TLSv1.1"},
			`config: ssl.enabled.protocols="TLSv1.1": must be a non-empty comma-separated list of TLSv1.2, TLSv1.3: "TLSv1.1" is not allowed`},
		{"override on plaintext listener", map[string]string{"listener.name.plaintext.ssl.client.auth": "none"},
			`config: listener.name.plaintext.ssl.client.auth="none": must be set for a TLS listener only (PLAINTEXT uses PLAINTEXT)`},
		{"override on unknown listener", map[string]string{"listener.name.nope.ssl.client.auth": "none"},
			`config: listener.name.nope.ssl.client.auth="none": must be a listener in listeners (listeners has PLAINTEXT, SSL, CONTROLLER)`},
		{"inter-broker over TLS", map[string]string{"inter.broker.listener.name": "SSL"},
			`config: inter.broker.listener.name="SSL": must be a PLAINTEXT listener: brokers do not dial each other over TLS or SASL yet (SSL uses SSL)`},
		{"secret not quoted", map[string]string{"listener.name.ssl.ssl.keystore.key": strings.Repeat("k", maxValueLen+1)},
			"config: listener.name.ssl.ssl.keystore.key=(hidden): must be text of at most 16384 bytes (at most 16384 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewBroker(sslProps(tt.props))
			if err == nil {
				t.Fatal("NewBroker succeeded")
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got  %s\n want %s", err, tt.want)
			}
		})
	}
}

func TestSecretNotDescribed(t *testing.T) {
	b, err := NewBroker(sslProps(map[string]string{"ssl.keystore.location": "", "ssl.keystore.certificate.chain": "c", "ssl.keystore.key": "TOPSECRET"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range DescribeBroker(b) {
		if strings.Contains(e.Value, "TOPSECRET") {
			t.Errorf("%s shows the secret", e.Name)
		}
		for _, s := range e.Synonyms {
			if strings.Contains(s.Value, "TOPSECRET") {
				t.Errorf("%s synonym shows the secret", e.Name)
			}
		}
		if e.Name == "ssl.keystore.key" && !e.Sensitive {
			t.Error("ssl.keystore.key not marked sensitive")
		}
	}
}
