package config

import (
	"strings"
	"testing"
	"time"
)

const kafkaValidator = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"

// TestOAuthBearerConfig: Kafka's KIP-768 broker properties, as its
// documentation writes them, configure Skein's validation.
func TestOAuthBearerConfig(t *testing.T) {
	b, err := NewBroker(saslProps(map[string]string{
		"sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
		"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": kafkaValidator,
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":                   "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;",
		"sasl.oauthbearer.jwks.endpoint.url":                                          "https://idp.example/.well-known/jwks.json",
		"sasl.oauthbearer.expected.audience":                                          "skein,kafka",
		"sasl.oauthbearer.expected.issuer":                                            "https://idp.example",
		"sasl.oauthbearer.sub.claim.name":                                             "client_id",
		"sasl.oauthbearer.clock.skew.seconds":                                         "5",
	}))
	if err != nil {
		t.Fatal(err)
	}
	o := b.OAuthBearer
	if o == nil || o.JWKSURL.Host != "idp.example" || strings.Join(o.Audience, ",") != "skein,kafka" || o.Issuer != "https://idp.example" ||
		o.SubjectClaim != "client_id" || o.ScopeClaim != "scope" || o.ClockSkew != 5*time.Second || o.Refresh != time.Hour ||
		o.RetryBackoff != 100*time.Millisecond || o.RetryBackoffMax != 10*time.Second {
		t.Fatalf("OAuthBearer %+v", o)
	}
	if b, err := NewBroker(saslProps(nil)); err != nil || b.OAuthBearer != nil {
		t.Fatalf("without OAUTHBEARER: %+v %v", b.OAuthBearer, err)
	}
	if b, err := NewBroker(saslProps(map[string]string{"sasl.enabled.mechanisms": "OAUTHBEARER",
		"sasl.oauthbearer.jwks.endpoint.url": "file:///etc/skein/jwks.json"})); err != nil || b.OAuthBearer.JWKSURL.Path != "/etc/skein/jwks.json" {
		t.Fatalf("file URL: %v", err)
	}
}

func TestOAuthBearerRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"no JWKS", map[string]string{"sasl.enabled.mechanisms": "OAUTHBEARER"}, "set to the identity provider's JWKS"},
		{"http JWKS", map[string]string{"sasl.oauthbearer.jwks.endpoint.url": "http://idp/jwks"}, "http:// is refused"},
		{"relative file", map[string]string{"sasl.oauthbearer.jwks.endpoint.url": "jwks.json"}, "want file:///path"},
		{"other class", map[string]string{"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": "com.example.MyValidator"},
			`"com.example.MyValidator" is not available`},
		{"unsecured validator", map[string]string{"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerUnsecuredValidatorCallbackHandler"},
			"unsecured validator"},
		{"class on a plaintext listener", map[string]string{"listener.name.plaintext.oauthbearer.sasl.server.callback.handler.class": kafkaValidator},
			"SASL listener only"},
		{"JAAS of another module", map[string]string{"sasl.enabled.mechanisms": "OAUTHBEARER", "sasl.oauthbearer.jwks.endpoint.url": "file:///j",
			"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": plainJAAS}, "must be an org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule entry"},
		{"JAAS malformed", map[string]string{"sasl.enabled.mechanisms": "OAUTHBEARER", "sasl.oauthbearer.jwks.endpoint.url": "file:///j",
			"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"}, "missing ';'"},
		{"skew", map[string]string{"sasl.oauthbearer.clock.skew.seconds": "-1"}, "sasl.oauthbearer.clock.skew.seconds"},
		{"backoff", map[string]string{"sasl.enabled.mechanisms": "OAUTHBEARER", "sasl.oauthbearer.jwks.endpoint.url": "file:///j",
			"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": "5000", "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "100"}, "at least"},
	} {
		_, err := NewBroker(saslProps(tc.props))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("%s: the error shows a password: %v", tc.name, err)
		}
	}
}
