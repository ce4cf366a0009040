package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/skein-log/skein/internal/principalmap"
)

// Security protocols Skein serves.
const (
	ProtocolPlaintext = "PLAINTEXT"
	ProtocolSSL       = "SSL"
	ProtocolSASLPlain = "SASL_PLAINTEXT"
	ProtocolSASLSSL   = "SASL_SSL"
)

// servedProtocols are the listener.security.protocol.map values Skein
// serves.
var servedProtocols = []string{ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlain, ProtocolSASLSSL}

// ListenerTLS is the effective TLS configuration of one SSL listener: each
// field is listener.name.NAME.PROPERTY if set, else the broker-wide
// PROPERTY.
type ListenerTLS struct {
	KeystoreLocation         string   // ssl.keystore.location
	KeystoreCertificateChain string   // ssl.keystore.certificate.chain
	KeystoreKey              string   // ssl.keystore.key (secret)
	TruststoreLocation       string   // ssl.truststore.location
	TruststoreCertificates   string   // ssl.truststore.certificates
	ClientAuth               string   // ssl.client.auth: none, requested, required
	EnabledProtocols         []string // ssl.enabled.protocols
	CipherSuites             []string // ssl.cipher.suites (empty: Go's defaults)
	// PrincipalMapping is ssl.principal.mapping.rules, parsed.
	PrincipalMapping []principalmap.MappingRule
}

// UsesTLS reports whether a listener's protocol runs over TLS.
func UsesTLS(protocol string) bool { return protocol == ProtocolSSL || protocol == ProtocolSASLSSL }

// UsesSASL reports whether a listener's protocol authenticates with SASL.
func UsesSASL(protocol string) bool {
	return protocol == ProtocolSASLPlain || protocol == ProtocolSASLSSL
}

// resolveTLS fills ListenerTLS for every TLS listener, checking that each
// has a key store and, when it verifies clients, a trust store.
func (b *Broker) resolveTLS(r *reader, scoped map[string]string) error {
	b.HandshakeTimeout = r.durationMs("ssl.handshake.timeout.ms")
	perListener := map[string]map[string]string{}
	for _, key := range slices.Sorted(maps.Keys(scoped)) {
		name, prop, _ := listenerScoped(key)
		if !strings.HasPrefix(prop, "ssl.") {
			continue
		}
		value := scoped[key]
		if reason, ok := theRegistry().byName[prop].Validate(value); !ok {
			return &Error{Key: key, Value: value, Reason: reason, Origin: b.origins[key]}
		}
		if err := b.checkScopedListener(key, value, name, "TLS", UsesTLS); err != nil {
			return err
		}
		if perListener[name] == nil {
			perListener[name] = map[string]string{}
		}
		perListener[name][prop] = strings.TrimSpace(value)
	}
	b.ListenerTLS = map[string]ListenerTLS{}
	for _, l := range b.securedListeners() {
		if !UsesTLS(l.SecurityProtocol) {
			continue
		}
		own := perListener[l.Name]
		get := func(prop string) string {
			if v, ok := own[prop]; ok {
				return v
			}
			return r.text(prop)
		}
		// The key which a failure names: the listener's own when set.
		keyOf := func(prop string) string {
			if _, ok := own[prop]; ok {
				return "listener.name." + strings.ToLower(l.Name) + "." + prop
			}
			return prop
		}
		fail := func(prop, reason string) error {
			k := keyOf(prop)
			return &Error{Key: k, Value: get(prop), Reason: reason, Origin: b.origins[k]}
		}
		t := ListenerTLS{
			KeystoreLocation:         get("ssl.keystore.location"),
			KeystoreCertificateChain: get("ssl.keystore.certificate.chain"),
			KeystoreKey:              get("ssl.keystore.key"),
			TruststoreLocation:       get("ssl.truststore.location"),
			TruststoreCertificates:   get("ssl.truststore.certificates"),
			ClientAuth:               get("ssl.client.auth"),
		}
		if _, own := own["ssl.client.auth"]; !own && l.SecurityProtocol == ProtocolSASLSSL {
			// As Kafka (KIP-684): the broker-wide ssl.client.auth is for
			// SSL listeners; a SASL_SSL one asks for client certificates
			// only through its own listener.name.NAME.ssl.client.auth.
			t.ClientAuth = "none"
		}
		t.EnabledProtocols, _ = splitList(get("ssl.enabled.protocols"))
		t.PrincipalMapping, _ = principalmap.ParseMappingRules(get("ssl.principal.mapping.rules")) // checked by the registry
		t.CipherSuites, _ = splitList(get("ssl.cipher.suites"))
		inline := t.KeystoreCertificateChain != "" || t.KeystoreKey != ""
		switch {
		case t.KeystoreLocation != "" && inline:
			return fail("ssl.keystore.location", "unset when ssl.keystore.certificate.chain or ssl.keystore.key is set (one key store, not two)")
		case t.KeystoreLocation == "" && !inline:
			return fail("ssl.keystore.location", fmt.Sprintf("set (or ssl.keystore.certificate.chain and ssl.keystore.key) for %s listener %s", l.SecurityProtocol, l.Name))
		case inline && (t.KeystoreCertificateChain == "" || t.KeystoreKey == ""):
			return fail("ssl.keystore.certificate.chain", "set together with ssl.keystore.key")
		}
		if t.TruststoreLocation != "" && t.TruststoreCertificates != "" {
			return fail("ssl.truststore.location", "unset when ssl.truststore.certificates is set")
		}
		if t.ClientAuth != "none" && t.TruststoreLocation == "" && t.TruststoreCertificates == "" {
			return fail("ssl.client.auth", fmt.Sprintf("none unless a trust store (ssl.truststore.location or ssl.truststore.certificates) says which client certificates %s trusts", l.Name))
		}
		b.ListenerTLS[l.Name] = t
	}
	return nil
}

// TLSOf returns a listener's TLS configuration; ok is false for a
// plaintext listener.
func (b *Broker) TLSOf(listener string) (ListenerTLS, bool) {
	t, ok := b.ListenerTLS[strings.ToUpper(listener)]
	return t, ok
}

// checkScopedListener checks that a listener.name.NAME. key names a
// listener of the kind the property is for.
func (b *Broker) checkScopedListener(key, value, name, kind string, uses func(protocol string) bool) error {
	l, ok := findListener(b.securedListeners(), name)
	if !ok {
		return &Error{Key: key, Value: value, Origin: b.origins[key],
			Reason: fmt.Sprintf("a listener in listeners (listeners has %s)", listenerNames(b.Listeners))}
	}
	if !uses(l.SecurityProtocol) {
		return &Error{Key: key, Value: value, Origin: b.origins[key],
			Reason: fmt.Sprintf("set for a %s listener only (%s uses %s)", kind, name, l.SecurityProtocol)}
	}
	return nil
}
