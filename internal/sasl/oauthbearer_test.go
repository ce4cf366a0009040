package sasl

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/jwt"
	"github.com/skein-log/skein/internal/jwttest"
)

// bearer frames a token as Kafka's clients send it (KIP-255).
func bearer(authzid, token string) []byte {
	return []byte("n," + authzid + ",\x01auth=Bearer " + token + "\x01\x01")
}

// oauthSession is an OAUTHBEARER session after its handshake, validating
// with key's JWKS, whose logins last at most maxReauth.
func oauthSession(t *testing.T, key jwttest.Key, maxReauth time.Duration) *Session {
	t.Helper()
	keys, err := jwt.ParseKeySet(jwttest.KeySet(t, key))
	if err != nil {
		t.Fatal(err)
	}
	s := NewSession([]string{MechanismOAuthBearer}, nil, nil)
	s.ValidateOAuth(func() OAuthValidator {
		return OAuthValidator{Keys: keys, Policy: jwt.Policy{Audience: []string{"skein"}, ClockSkew: 30 * time.Second}}
	})
	s.LimitLifetime(map[string]time.Duration{MechanismOAuthBearer: maxReauth})
	if _, o := s.Handshake(1, MechanismOAuthBearer); o.Code != 0 {
		t.Fatalf("handshake: %+v", o)
	}
	return s
}

func tokenFor(t *testing.T, key jwttest.Key, sub, aud string, exp time.Duration) string {
	return key.Sign(t, map[string]any{"sub": sub, "aud": aud, "iat": t0.Unix(), "exp": t0.Add(exp).Unix()})
}

func TestOAuthBearerSession(t *testing.T) {
	key := jwttest.RSA(t, "k1", "RS256")
	for _, tc := range []struct {
		name      string
		maxReauth time.Duration
		exp       time.Duration
		want      time.Duration
	}{
		{"token lifetime without connections.max.reauth.ms", 0, time.Hour, time.Hour},
		{"connections.max.reauth.ms shorter", time.Minute, time.Hour, time.Minute},
		{"token shorter", 2 * time.Hour, time.Hour, time.Hour},
		{"token past exp within the skew", 0, -10 * time.Second, time.Millisecond},
	} {
		s := oauthSession(t, key, tc.maxReauth)
		o := s.Authenticate(bearer("", tokenFor(t, key, "alice", "skein", tc.exp)), 1, t0)
		if o.Code != 0 || len(o.Token) != 0 || o.SessionLifetime != tc.want {
			t.Errorf("%s: %+v, want lifetime %v", tc.name, o, tc.want)
			continue
		}
		if user, ok := s.Authenticated(); !ok || user != "alice" {
			t.Errorf("%s: authenticated as %q %v", tc.name, user, ok)
		}
		if s.Admit(keyProduce, t0.Add(tc.want)) != Expired {
			t.Errorf("%s: the session outlives its lifetime", tc.name)
		}
	}
	s := oauthSession(t, key, 0)
	if o := s.Authenticate(bearer("a=alice", tokenFor(t, key, "alice", "skein", time.Hour)), 1, t0); o.Code != 0 {
		t.Errorf("authzid equal to the subject: %+v", o)
	}
}

// TestOAuthBearerRefusals: every refused token is answered with Kafka's
// error challenge, then, after the client's %x01, SASL_AUTHENTICATION_FAILED;
// the client never learns more than invalid_token, the log does.
func TestOAuthBearerRefusals(t *testing.T) {
	key := jwttest.RSA(t, "k1", "RS256")
	good := tokenFor(t, key, "alice", "skein", time.Hour)
	for _, tc := range []struct {
		name   string
		msg    []byte
		reason string
	}{
		{"expired", bearer("", tokenFor(t, key, "alice", "skein", -time.Hour)), "expired"},
		{"wrong audience", bearer("", tokenFor(t, key, "alice", "billing", time.Hour)), "audience"},
		{"other signer", bearer("", tokenFor(t, jwttest.RSA(t, "k1", "RS256"), "alice", "skein", time.Hour)), "does not verify"},
		{"unknown kid", bearer("", tokenFor(t, jwttest.RSA(t, "k2", "RS256"), "alice", "skein", time.Hour)), "no key with kid"},
		{"other authzid", bearer("a=admin", good), "authorization id"},
		{"no auth pair", []byte("n,,\x01host=x\x01\x01"), "no auth=Bearer"},
		{"not bearer", []byte("n,,\x01auth=Basic " + good + "\x01\x01"), "no auth=Bearer"},
		{"channel binding", []byte("p=tls-unique,,\x01auth=Bearer " + good + "\x01\x01"), "channel binding"},
		{"unterminated", []byte("n,,\x01auth=Bearer " + good + "\x01"), "must end"},
		{"duplicate key", []byte("n,,\x01auth=Bearer " + good + "\x01auth=Bearer x\x01\x01"), "twice"},
		{"oversized", bearer("", strings.Repeat("a", jwt.MaxTokenBytes+2048)), "too large"},
	} {
		s := oauthSession(t, key, 0)
		o := s.Authenticate(tc.msg, 1, t0)
		if o.Code != 0 || string(o.Token) != `{"status":"invalid_token"}` || !strings.Contains(o.Reason, tc.reason) || o.Close ||
			o.RefreshKeys != (tc.name == "unknown kid") {
			t.Errorf("%s: first answer %+v, want the error challenge (reason with %q)", tc.name, o, tc.reason)
			continue
		}
		if _, ok := s.Authenticated(); ok || s.Admit(keyProduce, t0) == Serve {
			t.Errorf("%s: served after the error challenge", tc.name)
		}
		o = s.Authenticate([]byte{1}, 1, t0)
		if o.Code != kerr.SaslAuthenticationFailed.Code || !o.Close || !o.Delay || !strings.Contains(o.Reason, tc.reason) ||
			strings.Contains(o.Message, "eyJ") {
			t.Errorf("%s: after %%x01: %+v", tc.name, o)
		}
	}
	s := oauthSession(t, key, 0)
	s.Authenticate(bearer("", tokenFor(t, key, "alice", "skein", -time.Hour)), 1, t0)
	if o := s.Authenticate(bearer("", good), 1, t0); o.Code != kerr.SaslAuthenticationFailed.Code || !strings.Contains(o.Reason, "did not acknowledge") {
		t.Errorf("a second token instead of %%x01: %+v", o)
	}
	if _, ok := s.Authenticated(); ok {
		t.Error("a second token after a refusal authenticated")
	}
	s = NewSession([]string{MechanismOAuthBearer}, nil, nil) // no JWKS loaded
	s.Handshake(1, MechanismOAuthBearer)
	if o := s.Authenticate(bearer("", good), 1, t0); !strings.Contains(o.Reason, "no JWKS") || !o.RefreshKeys {
		t.Errorf("without a key set: %+v", o)
	}
}

// TestOAuthBearerReauthentication: KIP-368 on OAUTHBEARER: a fresh token
// of the same subject renews the session, another subject is refused.
func TestOAuthBearerReauthentication(t *testing.T) {
	key := jwttest.RSA(t, "k1", "RS256")
	s := oauthSession(t, key, 0)
	if o := s.Authenticate(bearer("", tokenFor(t, key, "alice", "skein", time.Minute)), 1, t0); o.Code != 0 {
		t.Fatalf("login: %+v", o)
	}
	later := t0.Add(50 * time.Second)
	if _, o := s.Handshake(1, MechanismOAuthBearer); o.Code != 0 {
		t.Fatalf("re-authentication handshake: %+v", o)
	}
	o := s.Authenticate(bearer("", key.Sign(t, map[string]any{"sub": "alice", "aud": "skein", "iat": later.Unix(), "exp": later.Add(time.Hour).Unix()})), 1, later)
	if o.Code != 0 || o.SessionLifetime != time.Hour || s.Admit(keyProduce, t0.Add(2*time.Minute)) != Serve {
		t.Fatalf("renewed: %+v", o)
	}
	s.Handshake(1, MechanismOAuthBearer)
	o = s.Authenticate(bearer("", tokenFor(t, key, "mallory", "skein", time.Hour)), 1, later)
	if o.Code != kerr.SaslAuthenticationFailed.Code || !strings.Contains(o.Message, "Cannot change principals") {
		t.Fatalf("another subject: %+v", o)
	}
}
