package node

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/jwt"
	"github.com/skein-log/skein/internal/jwttest"
	"github.com/skein-log/skein/internal/testport"
)

// jwksServer serves *doc over real TLS, as an identity provider would;
// status overrides the answer when set.
func jwksServer(t *testing.T, doc *atomic.Pointer[[]byte], status *atomic.Int32) (*url.URL, *x509.CertPool) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := status.Load(); s != 0 {
			w.WriteHeader(int(s))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(*doc.Load())
	}))
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", testport.One(t)))
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	u, _ := url.Parse(srv.URL + "/.well-known/jwks.json")
	return u, roots
}

func source(u *url.URL, roots *x509.CertPool) *jwksSource {
	return newJWKSSource(&config.OAuthBearer{JWKSURL: u, Audience: []string{"skein"}, SubjectClaim: "sub", ScopeClaim: "scope"},
		roots, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func signedFor(t *testing.T, k jwttest.Key) string {
	now := time.Now()
	return k.Sign(t, map[string]any{"sub": "alice", "aud": "skein", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
}

// TestJWKSOverHTTPS: the key set is fetched over TLS, a rotated set
// replaces it on the next load, and a failed fetch (an HTTP error, an
// oversized or malformed body, an untrusted server) keeps the last keys.
func TestJWKSOverHTTPS(t *testing.T) {
	ctx := context.Background()
	k1, k2 := jwttest.RSA(t, "k1", "RS256"), jwttest.EC(t, "k2", "ES256")
	var doc atomic.Pointer[[]byte]
	var status atomic.Int32
	first := jwttest.KeySet(t, k1)
	doc.Store(&first)
	u, roots := jwksServer(t, &doc, &status)
	j := source(u, roots)
	if v := j.validator(); v.Keys != nil {
		t.Fatal("keys before any load")
	}
	if err := j.load(ctx); err != nil {
		t.Fatal(err)
	}
	v := j.validator()
	if _, err := jwt.Validate(signedFor(t, k1), v.Keys, v.Policy, time.Now()); err != nil {
		t.Fatalf("k1's token: %v", err)
	}
	rotated := jwttest.KeySet(t, k2)
	doc.Store(&rotated)
	if err := j.load(ctx); err != nil {
		t.Fatal(err)
	}
	v = j.validator()
	if _, err := jwt.Validate(signedFor(t, k2), v.Keys, v.Policy, time.Now()); err != nil {
		t.Fatalf("k2's token after rotation: %v", err)
	}
	if _, err := jwt.Validate(signedFor(t, k1), v.Keys, v.Policy, time.Now()); err == nil {
		t.Fatal("k1's token accepted after k1 left the set")
	}

	big := []byte(`{"keys":[],"pad":"` + strings.Repeat("x", jwt.MaxKeySetBytes) + `"}`)
	bad := []byte(`<html>`)
	for name, prepare := range map[string]func(){
		"HTTP 503":  func() { status.Store(http.StatusServiceUnavailable) },
		"oversized": func() { status.Store(0); doc.Store(&big) },
		"not JSON":  func() { status.Store(0); doc.Store(&bad) },
	} {
		prepare()
		if err := j.load(ctx); err == nil {
			t.Errorf("%s: loaded", name)
		}
		if j.validator().Keys != v.Keys {
			t.Errorf("%s: the last good keys were dropped", name)
		}
	}
	status.Store(0)
	doc.Store(&first)
	if err := source(u, x509.NewCertPool()).load(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("an untrusted JWKS server: %v", err)
	}
}

func TestJWKSFile(t *testing.T) {
	k := jwttest.RSA(t, "k1", "RS256")
	path := filepath.Join(t.TempDir(), "jwks.json")
	j := source(&url.URL{Scheme: "file", Path: path}, nil)
	if err := j.load(context.Background()); err == nil {
		t.Fatal("a missing file loaded")
	}
	if err := os.WriteFile(path, jwttest.KeySet(t, k), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := j.load(context.Background()); err != nil {
		t.Fatal(err)
	}
	v := j.validator()
	if _, err := jwt.Validate(signedFor(t, k), v.Keys, v.Policy, time.Now()); err != nil {
		t.Fatal(err)
	}
}
