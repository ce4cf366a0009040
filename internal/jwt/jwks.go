// Package jwt validates JSON Web Tokens signed with public keys (RFC 7515
// compact JWS, RFC 7519 claims) against a JSON Web Key Set (RFC 7517), as
// Kafka's OAUTHBEARER broker validation (KIP-768) does. It is pure: no
// clock, no I/O; the caller gives it the key set's bytes and the time.
package jwt

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
)

// Bounds on what a key set may hold: a JWKS endpoint is another party's
// server, so neither its size nor its key sizes are trusted.
const (
	MaxKeySetBytes = 1 << 20
	maxKeys        = 256
	minRSABits     = 2048
	maxRSABits     = 8192
)

// Key is one public signing key of a set.
type Key struct {
	ID string // kid; may be empty
	// Alg is the key's "alg" member: when set, the only algorithm it
	// verifies.
	Alg string
	pub any // *rsa.PublicKey or *ecdsa.PublicKey
}

// KeySet is a parsed JWKS: its signing keys, in the set's order.
type KeySet struct {
	Keys []Key
	// Skipped counts members that are not public signing keys Skein
	// verifies with (encryption keys, symmetric keys, unknown types):
	// they are ignored, as a JWKS may hold keys for other uses.
	Skipped int
}

type jwkJSON struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// ParseKeySet reads a JWKS document ({"keys":[...]}). A member that is
// not a usable public signing key is skipped; a set with none is an error,
// as is a malformed RSA or EC key (a key that cannot be what its issuer
// meant should be noticed, not ignored).
func ParseKeySet(data []byte) (*KeySet, error) {
	if len(data) > MaxKeySetBytes {
		return nil, fmt.Errorf("JWKS of %d bytes is over the %d-byte limit", len(data), MaxKeySetBytes)
	}
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("JWKS is not a JSON object with a keys array: %w", err)
	}
	if len(doc.Keys) > maxKeys {
		return nil, fmt.Errorf("JWKS holds %d keys, over the limit of %d", len(doc.Keys), maxKeys)
	}
	set := &KeySet{}
	for i, raw := range doc.Keys {
		var j jwkJSON
		if err := json.Unmarshal(raw, &j); err != nil {
			return nil, fmt.Errorf("JWKS key %d: %w", i, err)
		}
		if j.Use != "" && j.Use != "sig" {
			set.Skipped++
			continue
		}
		var pub any
		var err error
		switch j.Kty {
		case "RSA":
			pub, err = rsaKey(j)
		case "EC":
			pub, err = ecKey(j)
		default:
			set.Skipped++
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("JWKS key %d (kid %q): %w", i, j.Kid, err)
		}
		if j.Alg != "" && !algFits(j.Alg, pub) {
			return nil, fmt.Errorf("JWKS key %d (kid %q): alg %s does not fit a %s key", i, j.Kid, j.Alg, j.Kty)
		}
		set.Keys = append(set.Keys, Key{ID: j.Kid, Alg: j.Alg, pub: pub})
	}
	if len(set.Keys) == 0 {
		return nil, errors.New("JWKS holds no RSA or EC signing key")
	}
	return set, nil
}

func b64(field, s string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%s is not base64url: %w", field, err)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("%s is empty", field)
	}
	return b, nil
}

func rsaKey(j jwkJSON) (*rsa.PublicKey, error) {
	n, err := b64("n", j.N)
	if err != nil {
		return nil, err
	}
	e, err := b64("e", j.E)
	if err != nil {
		return nil, err
	}
	mod := new(big.Int).SetBytes(n)
	if bits := mod.BitLen(); bits < minRSABits || bits > maxRSABits {
		return nil, fmt.Errorf("RSA modulus of %d bits; %d to %d are accepted", bits, minRSABits, maxRSABits)
	}
	exp := new(big.Int).SetBytes(e)
	if !exp.IsInt64() || exp.Int64() < 3 || exp.Int64() > 1<<31-1 || exp.Bit(0) == 0 {
		return nil, errors.New("RSA exponent is not an odd number from 3 to 2^31-1")
	}
	return &rsa.PublicKey{N: mod, E: int(exp.Int64())}, nil
}

// curves maps a JWK crv to the curve and its coordinate size.
var curves = map[string]struct {
	curve elliptic.Curve
	size  int
}{
	"P-256": {elliptic.P256(), 32},
	"P-384": {elliptic.P384(), 48},
	"P-521": {elliptic.P521(), 66},
}

func ecKey(j jwkJSON) (*ecdsa.PublicKey, error) {
	c, ok := curves[j.Crv]
	if !ok {
		return nil, fmt.Errorf("EC curve %q is not P-256, P-384 or P-521", j.Crv)
	}
	x, err := b64("x", j.X)
	if err != nil {
		return nil, err
	}
	y, err := b64("y", j.Y)
	if err != nil {
		return nil, err
	}
	if len(x) != c.size || len(y) != c.size {
		return nil, fmt.Errorf("EC coordinates must be %d bytes on %s", c.size, j.Crv)
	}
	// The uncompressed point form, whose parsing checks it lies on the
	// curve.
	point := append(append([]byte{4}, x...), y...)
	pub, err := ecdsa.ParseUncompressedPublicKey(c.curve, point)
	if err != nil {
		return nil, fmt.Errorf("EC point is not on %s: %w", j.Crv, err)
	}
	return pub, nil
}
