// Package jwttest makes signing keys, their JWKS and signed tokens for
// tests of OAUTHBEARER: what an identity provider would issue.
package jwttest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	_ "crypto/sha256" // registers SHA-256 for crypto.Hash
	_ "crypto/sha512" // registers SHA-384 and SHA-512
	"encoding/base64"
	"encoding/json"
	"math/big"
	"testing"
)

// Key is a private signing key and the kid its JWKS entry names.
type Key struct {
	ID   string
	Alg  string // the JWS algorithm it signs with
	priv crypto.Signer
}

// RSA makes a 2048-bit RSA key signing with alg (RS256, RS384, RS512,
// PS256, PS384, PS512).
func RSA(t testing.TB, kid, alg string) Key {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return Key{ID: kid, Alg: alg, priv: k}
}

// EC makes an ECDSA key for alg (ES256 on P-256, ES384 on P-384, ES512 on
// P-521).
func EC(t testing.TB, kid, alg string) Key {
	t.Helper()
	curve := map[string]elliptic.Curve{"ES256": elliptic.P256(), "ES384": elliptic.P384(), "ES512": elliptic.P521()}[alg]
	k, err := ecdsa.GenerateKey(curve, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return Key{ID: kid, Alg: alg, priv: k}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func fixed(n *big.Int, size int) []byte { return n.FillBytes(make([]byte, size)) }

// JWK is the key's public JWKS entry.
func (k Key) JWK() map[string]any {
	switch pub := k.priv.Public().(type) {
	case *rsa.PublicKey:
		return map[string]any{"kty": "RSA", "kid": k.ID, "use": "sig", "alg": k.Alg,
			"n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes())}
	case *ecdsa.PublicKey:
		point, err := pub.Bytes() // 0x04 || x || y
		if err != nil {
			panic(err)
		}
		size := (len(point) - 1) / 2
		return map[string]any{"kty": "EC", "kid": k.ID, "use": "sig", "alg": k.Alg,
			"crv": pub.Curve.Params().Name, "x": b64(point[1 : 1+size]), "y": b64(point[1+size:])}
	}
	panic("unknown key type")
}

// KeySet is the JWKS document publishing the keys.
func KeySet(t testing.TB, keys ...Key) []byte {
	t.Helper()
	var entries []map[string]any
	for _, k := range keys {
		entries = append(entries, k.JWK())
	}
	out, err := json.Marshal(map[string]any{"keys": entries})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Sign issues a compact JWS of the claims, its header naming the key's
// alg and kid; header entries given override those.
func (k Key) Sign(t testing.TB, claims map[string]any, header ...map[string]any) string {
	t.Helper()
	h := map[string]any{"alg": k.Alg, "typ": "JWT", "kid": k.ID}
	for _, extra := range header {
		for name, v := range extra {
			if v == nil {
				delete(h, name)
			} else {
				h[name] = v
			}
		}
	}
	hj, _ := json.Marshal(h)
	cj, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	signed := b64(hj) + "." + b64(cj)
	hash := map[byte]crypto.Hash{'2': crypto.SHA256, '3': crypto.SHA384, '5': crypto.SHA512}[k.Alg[2]]
	d := hash.New()
	d.Write([]byte(signed))
	digest := d.Sum(nil)
	var sig []byte
	switch priv := k.priv.(type) {
	case *rsa.PrivateKey:
		if k.Alg[0] == 'P' {
			sig, err = rsa.SignPSS(rand.Reader, priv, hash, digest, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		} else {
			sig, err = rsa.SignPKCS1v15(rand.Reader, priv, hash, digest)
		}
	case *ecdsa.PrivateKey:
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, priv, digest)
		size := (priv.Curve.Params().BitSize + 7) / 8
		sig = append(fixed(r, size), fixed(s, size)...)
	}
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + b64(sig)
}
