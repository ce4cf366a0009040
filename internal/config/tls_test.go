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

// TestClusterListenersOverTLS: the inter-broker and controller listeners
// may be SSL with client certificates required and the brokers' principal
// among the super users.
func TestClusterListenersOverTLS(t *testing.T) {
	b, err := NewBroker(sslProps(map[string]string{
		"listener.security.protocol.map": "CONTROLLER:SSL,PLAINTEXT:PLAINTEXT,SSL:SSL",
		"inter.broker.listener.name":     "SSL",
		"ssl.client.auth":                "required",
		"ssl.truststore.location":        "/ca.pem",
		"super.users":                    "User:CN=broker",
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"SSL", "CONTROLLER"} {
		if set, ok := b.TLSOf(l); !ok || set.ClientAuth != "required" {
			t.Errorf("%s: %+v %v", l, set, ok)
		}
	}
}

// TestClusterListenersOverSASL: a SASL controller listener gives the
// node its login from the JAAS entry's username and password.
func TestClusterListenersOverSASL(t *testing.T) {
	b, err := NewBroker(sslProps(map[string]string{
		"listener.security.protocol.map":                  "CONTROLLER:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL",
		"listener.name.controller.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="s" user_broker="s";`,
		"super.users": "User:broker",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if set, _ := b.SASLOf("CONTROLLER"); set.LoginUser != "broker" || set.LoginPassword != "s" || b.InterBrokerSASLMechanism != "PLAIN" {
		t.Errorf("login %q/%q, mechanism %q", set.LoginUser, set.LoginPassword, b.InterBrokerSASLMechanism)
	}
}

// TestClusterListenersOverSCRAM: with a SCRAM inter-broker mechanism the
// login comes from the listener's SCRAM JAAS entry (Kafka's
// listener.name.NAME.scram-sha-512.sasl.jaas.config), no PLAIN users
// needed; an entry of the wrong login module is refused, naming its key.
func TestClusterListenersOverSCRAM(t *testing.T) {
	props := map[string]string{
		"listener.security.protocol.map":                          "CONTROLLER:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL",
		"sasl.enabled.mechanisms":                                 "SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol":                    "SCRAM-SHA-512",
		"listener.name.controller.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="s";`,
		"super.users": "User:broker",
	}
	b, err := NewBroker(sslProps(props))
	if err != nil {
		t.Fatal(err)
	}
	if set, _ := b.SASLOf("CONTROLLER"); set.LoginUser != "broker" || set.LoginPassword != "s" || b.InterBrokerSASLMechanism != "SCRAM-SHA-512" || len(set.PlainUsers) != 0 {
		t.Errorf("login %q/%q, mechanism %q, users %v", set.LoginUser, set.LoginPassword, b.InterBrokerSASLMechanism, set.PlainUsers)
	}
	props["listener.name.controller.scram-sha-512.sasl.jaas.config"] = `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="s";`
	_, err = NewBroker(sslProps(props))
	want := `config: listener.name.controller.scram-sha-512.sasl.jaas.config=(hidden): must be a ScramLoginModule entry with username="..." password="..." on CONTROLLER, a listener the nodes dial: they log in with them`
	if err == nil || err.Error() != want {
		t.Errorf("a PLAIN entry for a SCRAM login:\n got  %v\n want %s", err, want)
	}
}

// TestBrokerOnlyDialsSecuredControllers: a broker-only node resolves
// the controller listener's TLS and SASL settings although it does not
// listen there, to dial the controllers with them.
func TestBrokerOnlyDialsSecuredControllers(t *testing.T) {
	b, err := NewBroker(sslProps(map[string]string{
		"process.roles": "broker", "node.id": "2", "controller.quorum.voters": "1@h:9093",
		"listeners":                      "PLAINTEXT://h:9092,SSL://h:9094",
		"listener.security.protocol.map": "CONTROLLER:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL",
		"listener.name.controller.ssl.keystore.location":  "/etc/skein/broker-2.pem",
		"listener.name.controller.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="s" user_broker="s";`,
		"super.users": "User:broker",
	}))
	if err != nil {
		t.Fatal(err)
	}
	set, isTLS := b.TLSOf("CONTROLLER")
	login, isSASL := b.SASLOf("CONTROLLER")
	if !isTLS || !isSASL || set.KeystoreLocation != "/etc/skein/broker-2.pem" || login.LoginUser != "broker" {
		t.Fatalf("controller listener settings: TLS %+v %v, SASL %+v %v", set, isTLS, login, isSASL)
	}
	if _, listens := b.ListenerByName("CONTROLLER"); listens {
		t.Error("a broker-only node listens on the controller listener")
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
		{"inter-broker over TLS without client certificates", map[string]string{"inter.broker.listener.name": "SSL"},
			`config: ssl.client.auth="none": must be required on SSL, a listener the nodes dial: a node proves it is a broker by its certificate (mutual TLS)`},
		{"inter-broker over TLS without super users", map[string]string{"inter.broker.listener.name": "SSL",
			"listener.name.ssl.ssl.client.auth": "required", "listener.name.ssl.ssl.truststore.location": "/ca.pem"},
			`config: super.users="": must be the brokers' principals (their certificates' User:CN=... or SASL users) when SSL, a listener the nodes dial, uses SSL: only super users act as brokers there`},
		{"both ways of naming the inter-broker listener", map[string]string{"security.inter.broker.protocol": "SSL", "inter.broker.listener.name": "SSL"},
			`config: security.inter.broker.protocol="SSL": must be unset when inter.broker.listener.name is set (set one of them)`},
		{"broker-only node dialing TLS controllers", map[string]string{"process.roles": "broker", "listeners": "PLAINTEXT://h:9092,SSL://h:9094",
			"listener.security.protocol.map": "CONTROLLER:SSL,PLAINTEXT:PLAINTEXT,SSL:SSL", "controller.quorum.voters": "1@h:9093", "node.id": "2"},
			`config: ssl.client.auth="none": must be required on CONTROLLER, a listener the nodes dial: a node proves it is a broker by its certificate (mutual TLS)`},
		{"controller over SCRAM only", map[string]string{"listener.security.protocol.map": "CONTROLLER:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL",
			"sasl.enabled.mechanisms": "SCRAM-SHA-256"},
			`config: sasl.mechanism.inter.broker.protocol="PLAIN": must be one of sasl.enabled.mechanisms (SCRAM-SHA-256)`},
		{"controller over SASL without a login", map[string]string{"listener.security.protocol.map": "CONTROLLER:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL",
			"listener.name.controller.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_broker="s";`},
			`config: listener.name.controller.plain.sasl.jaas.config=(hidden): must be a PlainLoginModule entry with username="..." password="..." on CONTROLLER, a listener the nodes dial: they log in with them`},
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
	for _, e := range DescribeBroker(b, Dynamic{}) {
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

// TestSASLSSLIgnoresBrokerWideClientAuth: as in Kafka (KIP-684), the
// broker-wide ssl.client.auth applies to SSL listeners only; a SASL_SSL
// listener asks for client certificates through its own
// listener.name.NAME.ssl.client.auth.
func TestSASLSSLIgnoresBrokerWideClientAuth(t *testing.T) {
	props := sslProps(map[string]string{
		"listeners":                      "PLAINTEXT://h:9092,SSL://h:9094,SASL_SSL://h:9095,CONTROLLER://h:9093",
		"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL",
		"sasl.enabled.mechanisms":        "SCRAM-SHA-512",
		"ssl.client.auth":                "required",
		"ssl.truststore.location":        "/etc/skein/ca.pem",
	})
	b, err := NewBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	if ssl, _ := b.TLSOf("SSL"); ssl.ClientAuth != "required" {
		t.Errorf("SSL client auth %q", ssl.ClientAuth)
	}
	if sasl, _ := b.TLSOf("SASL_SSL"); sasl.ClientAuth != "none" {
		t.Errorf("SASL_SSL client auth %q, want none without its own setting", sasl.ClientAuth)
	}
	props["listener.name.sasl_ssl.ssl.client.auth"] = "required"
	if b, err = NewBroker(props); err != nil {
		t.Fatal(err)
	}
	if sasl, _ := b.TLSOf("SASL_SSL"); sasl.ClientAuth != "required" {
		t.Errorf("SASL_SSL client auth %q with listener.name.sasl_ssl.ssl.client.auth=required", sasl.ClientAuth)
	}
}
