package jwt

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	_ "crypto/sha256" // registers SHA-256 for crypto.Hash
	_ "crypto/sha512" // registers SHA-384 and SHA-512
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"
)

// MaxTokenBytes bounds a compact JWS: a token is read before anything
// about its sender is known.
const MaxTokenBytes = 32 << 10

// algorithm is one JWS signature algorithm Skein verifies (RFC 7518 §3).
type algorithm struct {
	hash crypto.Hash
	kind string // "RSA", "PSS" or "EC"
	// curveSize is the EC coordinate size (the signature is r||s).
	curveSize int
}

var algorithms = map[string]algorithm{
	"RS256": {crypto.SHA256, "RSA", 0},
	"RS384": {crypto.SHA384, "RSA", 0},
	"RS512": {crypto.SHA512, "RSA", 0},
	"PS256": {crypto.SHA256, "PSS", 0},
	"PS384": {crypto.SHA384, "PSS", 0},
	"PS512": {crypto.SHA512, "PSS", 0},
	"ES256": {crypto.SHA256, "EC", 32},
	"ES384": {crypto.SHA384, "EC", 48},
	"ES512": {crypto.SHA512, "EC", 66},
}

// Algorithms are the JWS algorithms a token may be signed with. "none"
// and the HMAC algorithms are never accepted: a broker holds no shared
// secret, and an unsigned token proves nothing.
func Algorithms() []string {
	out := make([]string, 0, len(algorithms))
	for a := range algorithms {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// algFits reports whether a key can verify the algorithm.
func algFits(alg string, pub any) bool {
	a, ok := algorithms[alg]
	if !ok {
		return false
	}
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return a.kind == "RSA" || a.kind == "PSS"
	case *ecdsa.PublicKey:
		return a.kind == "EC" && (k.Curve.Params().BitSize+7)/8 == a.curveSize
	}
	return false
}

// Policy is what a valid token must satisfy besides its signature
// (Kafka's sasl.oauthbearer.* broker properties).
type Policy struct {
	// Audience: when not empty, the token's aud must name one of these.
	Audience []string
	// Issuer: when set, the token's iss must equal it.
	Issuer string
	// SubjectClaim names the claim the principal is read from (sub).
	SubjectClaim string
	// ScopeClaim names the claim the scopes are read from (scope).
	ScopeClaim string
	// ClockSkew is how far exp, nbf and iat may be off the broker's clock.
	ClockSkew time.Duration
}

// Token is what a valid token says.
type Token struct {
	Subject   string
	Expires   time.Time
	IssuedAt  time.Time
	Scopes    []string
	Algorithm string
	KeyID     string
}

// Error is a refused token. Its message says why and never holds the
// token (a bearer token is a credential).
type Error struct {
	Reason string
	// UnknownKey is set when no key of the set fits the token: the
	// provider may have rotated in a key after the set was fetched.
	UnknownKey bool
}

func (e *Error) Error() string { return e.Reason }

func refuse(format string, args ...any) error { return &Error{Reason: fmt.Sprintf(format, args...)} }

type header struct {
	Alg  string          `json:"alg"`
	Kid  string          `json:"kid"`
	Crit json.RawMessage `json:"crit"`
}

// Validate checks a compact JWS token at now: its signature by a key of
// keys (by kid, or the only key fitting its algorithm when it names
// none), then its claims: exp and iat required, nbf if present, each
// within the policy's clock skew; aud and iss as the policy asks; the
// subject claim a non-empty string.
func Validate(token string, keys *KeySet, p Policy, now time.Time) (Token, error) {
	if len(token) > MaxTokenBytes {
		return Token{}, refuse("token of %d bytes is over the %d-byte limit", len(token), MaxTokenBytes)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Token{}, refuse("not a compact JWS: %d dot-separated parts, want 3", len(parts))
	}
	var h header
	if err := decodeJSON("header", parts[0], &h); err != nil {
		return Token{}, err
	}
	if len(h.Crit) > 0 {
		return Token{}, refuse("the header has critical extensions (crit), which Skein does not understand")
	}
	alg, ok := algorithms[h.Alg]
	if !ok {
		return Token{}, refuse("algorithm %q is not accepted (%s)", h.Alg, strings.Join(Algorithms(), ", "))
	}
	key, err := pickKey(keys, h)
	if err != nil {
		return Token{}, err
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return Token{}, refuse("the signature is not base64url")
	}
	if err := verify(alg, key.pub, []byte(parts[0]+"."+parts[1]), sig); err != nil {
		return Token{}, err
	}
	claims := map[string]json.RawMessage{}
	if err := decodeJSON("payload", parts[1], &claims); err != nil {
		return Token{}, err
	}
	t := Token{Algorithm: h.Alg, KeyID: key.ID}
	if t, err = checkClaims(t, claims, p, now); err != nil {
		return Token{}, err
	}
	return t, nil
}

func decodeJSON(what, part string, into any) error {
	raw, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return refuse("the %s is not base64url", what)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(into); err != nil {
		return refuse("the %s is not a JSON object", what)
	}
	if d.More() {
		return refuse("the %s has data after its JSON object", what)
	}
	return nil
}

func pickKey(keys *KeySet, h header) (Key, error) {
	if keys == nil {
		return Key{}, refuse("no JWKS is loaded yet")
	}
	var fitting []Key
	for _, k := range keys.Keys {
		if h.Kid != "" && k.ID != h.Kid {
			continue
		}
		if (k.Alg == "" || k.Alg == h.Alg) && algFits(h.Alg, k.pub) {
			fitting = append(fitting, k)
		}
	}
	unknown := func(format string, args ...any) error {
		return &Error{Reason: fmt.Sprintf(format, args...), UnknownKey: true}
	}
	switch {
	case len(fitting) == 1:
		return fitting[0], nil
	case h.Kid != "" && len(fitting) == 0:
		return Key{}, unknown("no key with kid %q for %s in the JWKS", h.Kid, h.Alg)
	case h.Kid == "" && len(fitting) == 0:
		return Key{}, unknown("no key for %s in the JWKS", h.Alg)
	case h.Kid == "":
		return Key{}, refuse("the token names no kid and the JWKS has %d keys for %s", len(fitting), h.Alg)
	}
	return Key{}, refuse("the JWKS has %d keys with kid %q for %s", len(fitting), h.Kid, h.Alg)
}

func verify(alg algorithm, pub any, signed, sig []byte) error {
	hasher := alg.hash.New()
	hasher.Write(signed)
	digest := hasher.Sum(nil)
	var ok bool
	switch alg.kind {
	case "RSA":
		ok = rsa.VerifyPKCS1v15(pub.(*rsa.PublicKey), alg.hash, digest, sig) == nil
	case "PSS":
		// RFC 7518 §3.5: the salt is as long as the hash.
		ok = rsa.VerifyPSS(pub.(*rsa.PublicKey), alg.hash, digest, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
	case "EC":
		// RFC 7518 §3.4: r and s, each as wide as the curve, not DER.
		if len(sig) == 2*alg.curveSize {
			r := new(big.Int).SetBytes(sig[:alg.curveSize])
			s := new(big.Int).SetBytes(sig[alg.curveSize:])
			ok = ecdsa.Verify(pub.(*ecdsa.PublicKey), digest, r, s)
		}
	}
	if !ok {
		return refuse("the signature does not verify")
	}
	return nil
}

func checkClaims(t Token, claims map[string]json.RawMessage, p Policy, now time.Time) (Token, error) {
	exp, err := numericDate(claims, "exp", true)
	if err != nil {
		return Token{}, err
	}
	iat, err := numericDate(claims, "iat", true)
	if err != nil {
		return Token{}, err
	}
	nbf, err := numericDate(claims, "nbf", false)
	if err != nil {
		return Token{}, err
	}
	if !now.Add(-p.ClockSkew).Before(exp) {
		return Token{}, refuse("the token expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if !nbf.IsZero() && now.Add(p.ClockSkew).Before(nbf) {
		return Token{}, refuse("the token is not valid before %s", nbf.UTC().Format(time.RFC3339))
	}
	if now.Add(p.ClockSkew).Before(iat) {
		return Token{}, refuse("the token is issued in the future (%s)", iat.UTC().Format(time.RFC3339))
	}
	if len(p.Audience) > 0 {
		aud, err := stringOrList(claims, "aud")
		if err != nil {
			return Token{}, err
		}
		if !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(p.Audience, a) }) {
			return Token{}, refuse("the token's audience %q is not one of the expected %q", aud, p.Audience)
		}
	}
	if p.Issuer != "" {
		var iss string
		if raw, ok := claims["iss"]; !ok || json.Unmarshal(raw, &iss) != nil || iss != p.Issuer {
			return Token{}, refuse("the token's issuer is not the expected %q", p.Issuer)
		}
	}
	subClaim := cmpOr(p.SubjectClaim, "sub")
	var sub string
	if raw, ok := claims[subClaim]; !ok || json.Unmarshal(raw, &sub) != nil || strings.TrimSpace(sub) == "" {
		return Token{}, refuse("the token has no %s claim naming its subject", subClaim)
	}
	scopeClaim := cmpOr(p.ScopeClaim, "scope")
	scopes, err := stringOrList(claims, scopeClaim)
	if err != nil {
		return Token{}, err
	}
	var one string
	if json.Unmarshal(claims[scopeClaim], &one) == nil {
		// RFC 8693 §4.2: a string scope is a space-separated list.
		scopes = strings.Fields(one)
	}
	t.Subject, t.Expires, t.IssuedAt, t.Scopes = sub, exp, iat, scopes
	return t, nil
}

func cmpOr(v, fallback string) string {
	if v == "" {
		return fallback
	}
	return v
}

// numericDate reads an RFC 7519 NumericDate: seconds since the epoch,
// possibly fractional. A missing optional claim is the zero time.
func numericDate(claims map[string]json.RawMessage, name string, required bool) (time.Time, error) {
	raw, ok := claims[name]
	if !ok {
		if required {
			return time.Time{}, refuse("the token has no %s claim", name)
		}
		return time.Time{}, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return time.Time{}, refuse("the %s claim is not a number", name)
	}
	f, err := n.Float64()
	// Bound it to years 0..9999 or so: time arithmetic must not overflow.
	if err != nil || math.IsNaN(f) || f < 0 || f > 253402300799 {
		return time.Time{}, refuse("the %s claim is not a date", name)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), nil
}

// stringOrList reads a claim that is a string or an array of strings
// (aud, scope); a missing claim is empty.
func stringOrList(claims map[string]json.RawMessage, name string) ([]string, error) {
	raw, ok := claims[name]
	if !ok {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, refuse("the %s claim is neither a string nor an array of strings", name)
	}
	return many, nil
}
