package config

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"

	"github.com/skein-log/skein/internal/principalmap"
)

// securityProperties configure TLS on SSL (and later SASL_SSL) listeners.
// Each may also be set for one listener as listener.name.NAME.PROPERTY,
// which wins over the broker-wide value, as in Kafka.
var securityProperties = []Property{
	{
		Name: "ssl.keystore.type", Kind: KindEnum, Default: "PEM", Values: []string{"PEM"},
		Doc: "Format of the key store. Skein reads PEM only (Kafka 2.7+'s PEM key stores); convert a JKS or PKCS12 store with keytool and openssl.",
	},
	{
		Name: "ssl.keystore.location", Kind: KindString,
		Doc: "PEM file holding this broker's private key (unencrypted PKCS#8, PKCS#1 or EC) and its certificate chain, leaf first. " +
			"Read again when its modification time changes, so a renewed certificate is used for new connections without a restart.",
	},
	{
		Name: "ssl.keystore.certificate.chain", Kind: KindString,
		Doc: "The certificate chain as inline PEM, instead of ssl.keystore.location (with ssl.keystore.key).",
	},
	{
		Name: "ssl.keystore.key", Kind: KindString, Sensitive: true,
		Doc: "The private key as inline unencrypted PEM, instead of ssl.keystore.location (with ssl.keystore.certificate.chain). Never shown by DescribeConfigs.",
	},
	{
		Name: "ssl.truststore.type", Kind: KindEnum, Default: "PEM", Values: []string{"PEM"},
		Doc: "Format of the trust store. Skein reads PEM only.",
	},
	{
		Name: "ssl.truststore.location", Kind: KindString,
		Doc: "PEM file of the CA certificates that client certificates must chain to (ssl.client.auth). Read again when its modification time changes.",
	},
	{
		Name: "ssl.truststore.certificates", Kind: KindString,
		Doc: "The trusted CA certificates as inline PEM, instead of ssl.truststore.location.",
	},
	{
		Name: "ssl.client.auth", Kind: KindEnum, Default: "none", Values: []string{"none", "requested", "required"},
		Doc: "Whether TLS clients must present a certificate: required refuses a client without one that chains to the trust store; " +
			"requested verifies one if given; none asks for none. As in Kafka (KIP-684), a SASL_SSL listener ignores the broker-wide value: " +
			"it asks for client certificates only through its own listener.name.NAME.ssl.client.auth.",
	},
	{
		Name: "ssl.enabled.protocols", Kind: KindList, Default: "TLSv1.2,TLSv1.3", Values: []string{"TLSv1.2", "TLSv1.3"}, NonEmpty: true,
		Doc: "TLS versions a listener accepts. Older versions are not offered at all.",
	},
	{
		Name: "ssl.cipher.suites", Kind: KindList, format: "IANA cipher suite names", check: checkCipherSuites,
		Doc: "TLS 1.2 cipher suites, by their IANA names (as Java names them). Empty: Go's secure defaults. " +
			"TLS 1.3 suites are always the three of RFC 8446 and may be listed but not removed.",
	},
	{
		Name: "ssl.principal.mapping.rules", Kind: KindString, Default: "DEFAULT",
		format: "DEFAULT or RULE:pattern/replacement/[LU], comma-separated", check: checkMappingRules,
		Doc: "How a verified client certificate's distinguished name (RFC 2253, e.g. CN=alice,O=Skein) becomes the principal User:NAME: " +
			"the first rule whose pattern matches the whole name gives NAME (with $1... groups; /L lower-cases, /U upper-cases it); DEFAULT keeps the name. " +
			"A certificate no rule applies to is refused.",
	},
	{
		Name: "ssl.handshake.timeout.ms", Kind: KindDurationMs, Default: "10000", Min: 1, Max: maxDurationMs,
		Doc: "Skein extension: a TLS handshake not complete this long after the connection was accepted closes the connection.",
	},
}

// sslListenerScoped are the security properties that listener.name.NAME.
// may prefix.
func sslListenerScoped() []string {
	var out []string
	for _, p := range securityProperties {
		if p.Name != "ssl.handshake.timeout.ms" {
			out = append(out, p.Name)
		}
	}
	return out
}

// tls13Suites may be named in ssl.cipher.suites but cannot be configured.
var tls13Suites = []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}

// CipherSuiteID returns Go's id for a TLS 1.2 suite; ok is false for the
// TLS 1.3 ones (always on) and for names Go does not offer securely.
func CipherSuiteID(name string) (id uint16, ok bool) {
	for _, s := range tls.CipherSuites() {
		if s.Name == name {
			return s.ID, !slices.Contains(tls13Suites, name)
		}
	}
	return 0, false
}

func checkMappingRules(v string) error {
	_, err := principalmap.ParseMappingRules(v)
	return err
}

func checkCipherSuites(v string) error {
	items, err := splitList(v)
	if err != nil {
		return err
	}
	for _, name := range items {
		if _, ok := CipherSuiteID(name); !ok && !slices.Contains(tls13Suites, name) {
			var known []string
			for _, s := range tls.CipherSuites() {
				known = append(known, s.Name)
			}
			return fmt.Errorf("%q is not a secure cipher suite Skein offers (%s)", name, strings.Join(known, ", "))
		}
	}
	return nil
}

// saslProperties configure SASL_PLAINTEXT and SASL_SSL listeners.
var saslProperties = []Property{
	{
		Name: "sasl.mechanism.inter.broker.protocol", Kind: KindEnum, Default: "PLAIN", Values: []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"},
		Doc: "SASL mechanism nodes log in to each other's SASL_SSL and SASL_PLAINTEXT controller and inter-broker listeners with " +
			"(one of sasl.enabled.mechanisms), using the username and password options of that listener's JAAS entry for it: " +
			"listener.name.NAME.MECHANISM.sasl.jaas.config (mechanism in lower case), else sasl.jaas.config; a PlainLoginModule " +
			"for PLAIN, a ScramLoginModule for SCRAM, whose user must exist as a SCRAM credential (Kafka's default, GSSAPI, is not served).",
	},
	{
		Name: "sasl.enabled.mechanisms", Kind: KindList, Default: "PLAIN", Values: []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}, NonEmpty: true,
		Doc: "SASL mechanisms SASL listeners offer: PLAIN (users from the JAAS config), SCRAM-SHA-256 and " +
			"SCRAM-SHA-512 (users from the replicated credentials AlterUserScramCredentials manages), OAUTHBEARER " +
			"(JWTs from an identity provider, verified against sasl.oauthbearer.jwks.endpoint.url; a listener may name Kafka's " +
			"validator in listener.name.NAME.oauthbearer.sasl.server.callback.handler.class). Kafka's default, GSSAPI, is not served.",
	},
	{
		Name: "sasl.jaas.config", Kind: KindString, Sensitive: true,
		Doc: "JAAS login module entry every SASL listener reads its users from unless it has its own " +
			"listener.name.NAME.plain.sasl.jaas.config: for PLAIN, org.apache.kafka.common.security.plain.PlainLoginModule required " +
			`user_NAME="password" ...; (one user_ option per user). Never shown by DescribeConfigs.`,
	},
	{
		Name: reauthProperty, Kind: KindDurationMs, Default: "0", Min: 0, Max: maxDurationMs,
		Doc: "KIP-368: how long a SASL login lasts. SaslAuthenticate v1+ tells the client (session_lifetime_ms), which logs in again " +
			"on the same connection before it passes; a connection that did not and sends anything but a SaslHandshake is closed. " +
			"A deleted SCRAM user or a changed password thus loses its open connections within this time. 0: logins do not expire. " +
			"May be set per listener and mechanism as listener.name.NAME.MECHANISM.connections.max.reauth.ms (mechanism in lower case, " +
			"e.g. listener.name.sasl_ssl.scram-sha-512.connections.max.reauth.ms) or per listener as listener.name.NAME.connections.max.reauth.ms.",
	},
	{
		Name: "connection.failed.authentication.delay.ms", Kind: KindDurationMs, Default: "100", Min: 0, Max: maxDurationMs,
		Doc: "How long a failed authentication's answer is held before the connection is closed, slowing password guessing.",
	},
}
