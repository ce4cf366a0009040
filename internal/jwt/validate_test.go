package jwt

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/jwttest"
)

var now = time.Unix(1_800_000_000, 0)

func claims(overrides map[string]any) map[string]any {
	c := map[string]any{"sub": "alice", "iss": "https://idp.example", "aud": "skein",
		"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(), "scope": "kafka read"}
	for k, v := range overrides {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func TestValidate(t *testing.T) {
	rs := jwttest.RSA(t, "rsa-1", "RS256")
	es := jwttest.EC(t, "ec-1", "ES256")
	es384 := jwttest.EC(t, "ec-2", "ES384")
	ps := jwttest.RSA(t, "pss-1", "PS256")
	stranger := jwttest.RSA(t, "rsa-1", "RS256") // same kid, another key
	keys, err := ParseKeySet(jwttest.KeySet(t, rs, es, es384, ps))
	if err != nil {
		t.Fatal(err)
	}
	policy := Policy{Audience: []string{"skein", "other"}, Issuer: "https://idp.example", ClockSkew: 30 * time.Second}
	unsigned := func() string {
		parts := strings.Split(rs.Sign(t, claims(nil)), ".")
		return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"rsa-1"}`)) + "." + parts[1] + "."
	}
	tamper := func() string {
		parts := strings.Split(rs.Sign(t, claims(nil)), ".")
		other := strings.Split(rs.Sign(t, claims(map[string]any{"sub": "admin"})), ".")
		return parts[0] + "." + other[1] + "." + parts[2]
	}
	for _, tc := range []struct {
		name, token string
		policy      *Policy
		want        string // "" = valid
	}{
		{"RS256", rs.Sign(t, claims(nil)), nil, ""},
		{"ES256", es.Sign(t, claims(nil)), nil, ""},
		{"ES384", es384.Sign(t, claims(nil)), nil, ""},
		{"PS256", ps.Sign(t, claims(nil)), nil, ""},
		{"audience list", rs.Sign(t, claims(map[string]any{"aud": []string{"x", "other"}})), nil, ""},
		{"expired within skew", rs.Sign(t, claims(map[string]any{"exp": now.Add(-10 * time.Second).Unix()})), nil, ""},
		{"no kid, one key fits", rs.Sign(t, claims(nil), map[string]any{"kid": nil}), nil, ""},
		{"no audience expected", rs.Sign(t, claims(map[string]any{"aud": nil})), &Policy{}, ""},
		{"expired", rs.Sign(t, claims(map[string]any{"exp": now.Add(-time.Minute).Unix()})), nil, "expired"},
		{"not yet valid", rs.Sign(t, claims(map[string]any{"nbf": now.Add(time.Minute).Unix()})), nil, "not valid before"},
		{"issued in the future", rs.Sign(t, claims(map[string]any{"iat": now.Add(time.Minute).Unix()})), nil, "future"},
		{"no exp", rs.Sign(t, claims(map[string]any{"exp": nil})), nil, "no exp"},
		{"no iat", rs.Sign(t, claims(map[string]any{"iat": nil})), nil, "no iat"},
		{"exp not a number", rs.Sign(t, claims(map[string]any{"exp": "tomorrow"})), nil, "not a number"},
		{"wrong audience", rs.Sign(t, claims(map[string]any{"aud": "billing"})), nil, "audience"},
		{"no audience", rs.Sign(t, claims(map[string]any{"aud": nil})), nil, "audience"},
		{"wrong issuer", rs.Sign(t, claims(map[string]any{"iss": "https://evil.example"})), nil, "issuer"},
		{"no subject", rs.Sign(t, claims(map[string]any{"sub": nil})), nil, "no sub claim"},
		{"subject claim renamed", rs.Sign(t, claims(map[string]any{"client_id": "svc"})), &Policy{SubjectClaim: "email"}, "no email claim"},
		{"unknown kid", rs.Sign(t, claims(nil), map[string]any{"kid": "rotated-away"}), nil, `kid "rotated-away"`},
		{"bad signature (other key, same kid)", stranger.Sign(t, claims(nil)), nil, "does not verify"},
		{"tampered payload", tamper(), nil, "does not verify"},
		{"alg none", unsigned(), nil, `"none" is not accepted`},
		{"HS256", rs.Sign(t, claims(nil), map[string]any{"alg": "HS256"}), nil, `"HS256" is not accepted`},
		{"alg of another key type", rs.Sign(t, claims(nil), map[string]any{"alg": "ES256"}), nil, "no key with kid"},
		{"crit header", rs.Sign(t, claims(nil), map[string]any{"crit": []string{"exp"}}), nil, "crit"},
		{"oversized", rs.Sign(t, claims(map[string]any{"pad": strings.Repeat("x", MaxTokenBytes)})), nil, "over the"},
		{"not a JWS", "abc.def", nil, "3"},
		{"garbage base64", "!!.!!.!!", nil, "base64url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := policy
			if tc.policy != nil {
				p = *tc.policy
			}
			tok, err := Validate(tc.token, keys, p, now)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if tok.Subject == "" || !tok.Expires.After(now.Add(-time.Minute)) {
					t.Fatalf("token %+v", tok)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), tc.token) {
				t.Fatal("the error quotes the token")
			}
			var e *Error
			if !errors.As(err, &e) || e.UnknownKey != strings.Contains(tc.want, "kid") {
				t.Fatalf("UnknownKey is %v for %v", e != nil && e.UnknownKey, err)
			}
		})
	}
}

func TestValidateClaims(t *testing.T) {
	k := jwttest.RSA(t, "k", "RS512")
	keys, err := ParseKeySet(jwttest.KeySet(t, k))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Validate(k.Sign(t, claims(map[string]any{"exp": 1_800_003_600.5})), keys, Policy{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Subject != "alice" || strings.Join(tok.Scopes, ",") != "kafka,read" || tok.KeyID != "k" || tok.Algorithm != "RS512" ||
		!tok.Expires.Equal(time.Unix(1_800_003_600, 5e8)) {
		t.Fatalf("token %+v", tok)
	}
	tok, err = Validate(k.Sign(t, claims(map[string]any{"roles": []string{"a b", "c"}})), keys, Policy{ScopeClaim: "roles"}, now)
	if err != nil || strings.Join(tok.Scopes, ",") != "a b,c" {
		t.Fatalf("list scopes %q, %v", tok.Scopes, err)
	}
	if _, err := Validate(k.Sign(t, claims(nil)), nil, Policy{}, now); err == nil || !strings.Contains(err.Error(), "no JWKS") {
		t.Fatalf("without keys: %v", err)
	}
}

func TestParseKeySet(t *testing.T) {
	rs := jwttest.RSA(t, "a", "RS256")
	two := jwttest.RSA(t, "b", "RS256")
	keys, err := ParseKeySet(jwttest.KeySet(t, rs, two))
	if err != nil {
		t.Fatal(err)
	}
	// Two keys fit a token without a kid: which one signed is ambiguous.
	if _, err := Validate(rs.Sign(t, claims(nil), map[string]any{"kid": nil}), keys, Policy{}, now); err == nil || !strings.Contains(err.Error(), "names no kid") {
		t.Fatalf("ambiguous key: %v", err)
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"not JSON", `{"keys":`, "not a JSON object"},
		{"no signing key", `{"keys":[{"kty":"oct","k":"c2VjcmV0"},{"kty":"RSA","use":"enc"}]}`, "no RSA or EC signing key"},
		{"short RSA", `{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`, "bits"},
		{"EC off the curve", `{"keys":[{"kty":"EC","crv":"P-256","x":"` + strings.Repeat("A", 43) + `","y":"` + strings.Repeat("A", 43) + `"}]}`, "not on P-256"},
		{"EC curve", `{"keys":[{"kty":"EC","crv":"secp256k1","x":"AA","y":"AA"}]}`, "curve"},
		{"alg mismatch", strings.Replace(string(jwttest.KeySet(t, rs)), `"RS256"`, `"ES256"`, 1), "does not fit"},
		{"oversized", `{"keys":[],"pad":"` + strings.Repeat("x", MaxKeySetBytes) + `"}`, "limit"},
	} {
		if _, err := ParseKeySet([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
