package config

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/skein-log/skein/internal/sasl"
)

// OAuthValidatorClass is the class name of Skein's OAUTHBEARER token
// validation (JWTs checked against a JWKS).
const OAuthValidatorClass = "skein.security.OAuthBearerValidatorCallbackHandler"

// oauthValidatorAliases are the server callback handler classes Skein's
// own validation serves: Kafka's KIP-768 validator, so that its
// server.properties runs unchanged.
var oauthValidatorAliases = []string{
	OAuthValidatorClass,
	"org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
	"org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",
}

// callbackHandlerScoped is the listener-scoped server callback handler of
// OAUTHBEARER, as Kafka names it:
// listener.name.NAME.oauthbearer.sasl.server.callback.handler.class.
const callbackHandlerScoped = "oauthbearer.sasl.server.callback.handler.class"

// OAuthBearer is the broker's OAUTHBEARER validation (KIP-768).
type OAuthBearer struct {
	// JWKSURL is sasl.oauthbearer.jwks.endpoint.url: a file:// or an
	// https:// URL.
	JWKSURL *url.URL
	// Refresh is sasl.oauthbearer.jwks.endpoint.refresh.ms; RetryBackoff
	// and RetryBackoffMax bound the retries of a failed fetch.
	Refresh, RetryBackoff, RetryBackoffMax time.Duration
	Audience                               []string // sasl.oauthbearer.expected.audience
	Issuer                                 string   // sasl.oauthbearer.expected.issuer
	SubjectClaim                           string   // sasl.oauthbearer.sub.claim.name
	ScopeClaim                             string   // sasl.oauthbearer.scope.claim.name
	ClockSkew                              time.Duration
}

var oauthProperties = []Property{
	{
		Name: "sasl.oauthbearer.jwks.endpoint.url", Kind: KindString, format: "empty, a file:// URL or an https:// URL", check: checkJWKSURL,
		Doc: "KIP-768: where the identity provider publishes the JSON Web Key Set OAUTHBEARER tokens are verified with: an https:// URL " +
			"(fetched at start and every sasl.oauthbearer.jwks.endpoint.refresh.ms, with a 10s timeout and a 1 MiB limit, trusting the system's CAs) " +
			"or a file:// URL (read again at the same interval). Required when sasl.enabled.mechanisms lists OAUTHBEARER. " +
			"Plain http:// is refused: keys fetched without TLS could be anyone's.",
	},
	{
		Name: "sasl.oauthbearer.jwks.endpoint.refresh.ms", Kind: KindDurationMs, Default: "3600000", Min: 1000, Max: maxDurationMs,
		Doc: "How often the JWKS is fetched again, so that keys the provider rotates in are used and keys it removes stop being trusted.",
	},
	{
		Name: "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", Kind: KindDurationMs, Default: "100", Min: 1, Max: maxDurationMs,
		Doc: "First wait before retrying a failed JWKS fetch; each further failure doubles it, up to sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms. " +
			"The keys last fetched stay in use meanwhile.",
	},
	{
		Name: "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", Kind: KindDurationMs, Default: "10000", Min: 1, Max: maxDurationMs,
		Doc: "Longest wait between retries of a failed JWKS fetch; also the least time between early fetches, which a token naming a kid the set lacks asks for (a key rotated in).",
	},
	{
		Name: "sasl.oauthbearer.expected.audience", Kind: KindList,
		Doc: "Audiences a token must be issued for: its aud claim must name one of them. Empty: aud is not checked.",
	},
	{
		Name: "sasl.oauthbearer.expected.issuer", Kind: KindString,
		Doc: "Issuer a token's iss claim must equal. Empty: iss is not checked.",
	},
	{
		Name: "sasl.oauthbearer.sub.claim.name", Kind: KindString, Default: "sub", check: nonBlank,
		Doc: "Claim naming the token's subject, which becomes the principal User:SUBJECT the authorizer checks.",
	},
	{
		Name: "sasl.oauthbearer.scope.claim.name", Kind: KindString, Default: "scope", check: nonBlank,
		Doc: "Claim holding the token's scopes: a space-separated string or an array of strings (a token whose claim is neither is refused). " +
			"Scopes grant nothing by themselves: what a principal may do is decided by ACLs, as with Kafka's validator and StandardAuthorizer.",
	},
	{
		Name: "sasl.oauthbearer.clock.skew.seconds", Kind: KindInt, Default: "30", Min: 0, Max: 3600,
		Doc: "How far the token's exp, nbf and iat may be off this broker's clock.",
	},
}

func checkJWKSURL(v string) error {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	u, err := url.Parse(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	switch {
	case u.Scheme == "file" && u.Path != "" && (u.Host == "" || u.Host == "localhost"):
	case u.Scheme == "https" && u.Host != "":
	case u.Scheme == "http":
		return fmt.Errorf("http:// is refused: keys fetched without TLS could be anyone's; use https:// or a file:// URL")
	default:
		return fmt.Errorf("want file:///path/to/jwks.json or https://host/path")
	}
	return nil
}

func checkCallbackHandlerClass(v string) error {
	if slices.Contains(oauthValidatorAliases, strings.TrimSpace(v)) {
		return nil
	}
	return fmt.Errorf("server callback handler class %q is not available: Skein cannot load Java classes; OAUTHBEARER tokens are validated "+
		"against sasl.oauthbearer.jwks.endpoint.url by %s (or Kafka's org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler, "+
		"its alias); Kafka's unsecured validator, which trusts unsigned tokens, is not offered", v, OAuthValidatorClass)
}

// resolveOAuth reads the OAUTHBEARER validation when a SASL listener
// offers it, and checks each listener's callback handler class.
func (b *Broker) resolveOAuth(r *reader, scoped map[string]string, mechanisms []string) error {
	for _, key := range slices.Sorted(maps.Keys(scoped)) {
		name, prop, _ := listenerScoped(key)
		if prop != callbackHandlerScoped {
			continue
		}
		value := scoped[key]
		if err := b.checkScopedListener(key, value, name, "SASL", UsesSASL); err != nil {
			return err
		}
		if err := checkCallbackHandlerClass(value); err != nil {
			return &Error{Key: key, Value: value, Reason: err.Error(), Origin: b.origins[key]}
		}
	}
	if !slices.Contains(mechanisms, sasl.MechanismOAuthBearer) {
		return nil
	}
	raw := r.text("sasl.oauthbearer.jwks.endpoint.url")
	if raw == "" {
		return b.ruleError(r, "sasl.oauthbearer.jwks.endpoint.url",
			"set to the identity provider's JWKS (https:// or file://) when sasl.enabled.mechanisms lists OAUTHBEARER: tokens are verified with its keys")
	}
	u, _ := url.Parse(raw) // checked by checkJWKSURL
	b.OAuthBearer = &OAuthBearer{
		JWKSURL:         u,
		Refresh:         r.durationMs("sasl.oauthbearer.jwks.endpoint.refresh.ms"),
		RetryBackoff:    r.durationMs("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms"),
		RetryBackoffMax: r.durationMs("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms"),
		Audience:        r.list("sasl.oauthbearer.expected.audience"),
		Issuer:          r.text("sasl.oauthbearer.expected.issuer"),
		SubjectClaim:    r.text("sasl.oauthbearer.sub.claim.name"),
		ScopeClaim:      r.text("sasl.oauthbearer.scope.claim.name"),
		ClockSkew:       time.Duration(r.int("sasl.oauthbearer.clock.skew.seconds")) * time.Second,
	}
	if b.OAuthBearer.RetryBackoffMax < b.OAuthBearer.RetryBackoff {
		return b.ruleError(r, "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", "at least sasl.oauthbearer.jwks.endpoint.retry.backoff.ms")
	}
	return nil
}

func nonBlank(v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("a claim name, not empty")
	}
	return nil
}
