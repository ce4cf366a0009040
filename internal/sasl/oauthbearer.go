package sasl

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/skein-log/skein/internal/jwt"
)

// MechanismOAuthBearer is RFC 7628's OAUTHBEARER with Kafka's framing
// (KIP-255): the client sends a bearer token, a JWT the broker validates
// against its identity provider's published keys (KIP-768).
const MechanismOAuthBearer = "OAUTHBEARER"

// OAuthBearerLoginModule is the JAAS class of Kafka's OAUTHBEARER logins.
const OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"

// OAuthValidator is what validates OAUTHBEARER tokens: the current key
// set (nil until one was loaded) and the policy tokens must meet.
type OAuthValidator struct {
	Keys   *jwt.KeySet
	Policy jwt.Policy
}

// OAuthLookup returns the validator to use now: the key set is refreshed
// by the connection's owner, so a session asks for it at each token.
type OAuthLookup func() OAuthValidator

// oauthInvalidToken is the server's error challenge (RFC 7628 §3.2.2),
// as Kafka answers every refused token: the client then sends a single
// %x01 and the exchange fails.
const oauthInvalidToken = `{"status":"invalid_token"}`

// oauthBearer matches the auth value: "Bearer" (any case), then the token.
var oauthBearer = regexp.MustCompile(`^(?i:bearer)[ ]+([-_.a-zA-Z0-9]+)[ ]*$`)

// parseOAuthClientResponse reads the client's initial response (RFC 7628
// §3.1, KIP-255): gs2-header "n,," or "n,a=AUTHZID,", then %x01, then
// key=value pairs each ending with %x01, then a final %x01. auth is
// required; other keys are SASL extensions, which Skein's validation
// does not use.
func parseOAuthClientResponse(msg []byte) (token, authzid string, err error) {
	if len(msg) > jwt.MaxTokenBytes+1024 {
		return "", "", fmt.Errorf("initial response of %d bytes is too large", len(msg))
	}
	gs2, rest, ok := bytes.Cut(msg, []byte{1})
	if !ok {
		return "", "", fmt.Errorf("no %%x01 after the GS2 header")
	}
	h := string(gs2)
	if !strings.HasPrefix(h, "n,") || !strings.HasSuffix(h, ",") {
		return "", "", fmt.Errorf("GS2 header must be n,, or n,a=AUTHZID, (channel binding is not supported)")
	}
	if a := strings.TrimSuffix(strings.TrimPrefix(h, "n,"), ","); a != "" {
		var found bool
		if authzid, found = strings.CutPrefix(a, "a="); !found || authzid == "" || strings.Contains(authzid, ",") {
			return "", "", fmt.Errorf("malformed authorization id in the GS2 header")
		}
	}
	body, found := bytes.CutSuffix(rest, []byte{1, 1})
	if !found && !bytes.Equal(rest, []byte{1}) {
		return "", "", fmt.Errorf("the key=value pairs must end with %%x01%%x01")
	}
	var auth string
	seen := map[string]bool{}
	for kv := range bytes.SplitSeq(body, []byte{1}) {
		k, v, ok := bytes.Cut(kv, []byte{'='})
		if !ok || len(k) == 0 {
			return "", "", fmt.Errorf("a key=value pair is malformed")
		}
		if seen[string(k)] {
			return "", "", fmt.Errorf("key %q appears twice", k)
		}
		seen[string(k)] = true
		if string(k) == "auth" {
			auth = string(v)
		}
	}
	m := oauthBearer.FindStringSubmatch(auth)
	if m == nil {
		return "", "", fmt.Errorf(`no auth=Bearer <token> pair`)
	}
	return m[1], authzid, nil
}

// oauthStep serves one OAUTHBEARER client message: the initial response,
// or after a refused token the client's %x01 acknowledging the error
// challenge, which Kafka answers with SASL_AUTHENTICATION_FAILED.
// On success it returns the token's expiry, which bounds the session.
func (s *Session) oauthStep(token []byte, now time.Time) (Outcome, time.Time) {
	if s.oauthRefusal != "" {
		reason := s.oauthRefusal
		s.oauthRefusal = ""
		if !bytes.Equal(token, []byte{1}) {
			reason = "the client did not acknowledge the error challenge with %x01 (" + reason + ")"
		}
		o := s.fail(oauthInvalidToken, true)
		o.Reason = reason
		return o, time.Time{}
	}
	refuse := func(reason string) (Outcome, time.Time) {
		// The token was bad, but the client learns why only as Kafka
		// tells it: the error challenge, then a failure.
		s.oauthRefusal = reason
		return Outcome{Token: []byte(oauthInvalidToken), Reason: reason}, time.Time{}
	}
	bearer, authzid, err := parseOAuthClientResponse(token)
	if err != nil {
		return refuse("malformed client response: " + err.Error())
	}
	v := s.oauth()
	t, err := jwt.Validate(bearer, v.Keys, v.Policy, now)
	if err != nil {
		o, _ := refuse("invalid token: " + err.Error())
		var je *jwt.Error
		o.RefreshKeys = v.Keys == nil || errors.As(err, &je) && je.UnknownKey
		return o, time.Time{}
	}
	if authzid != "" && authzid != t.Subject {
		return refuse("the authorization id differs from the token's subject")
	}
	s.user = t.Subject
	return Outcome{}, t.Expires
}
