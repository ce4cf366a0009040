package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/jwt"
	"github.com/skein-log/skein/internal/sasl"
)

// jwksFetchTimeout bounds one fetch of an https:// JWKS: a stalled
// identity provider must not hold the refresher for long.
const jwksFetchTimeout = 10 * time.Second

// jwksSource keeps the OAUTHBEARER key set of sasl.oauthbearer.jwks.endpoint.url
// current: loaded at start, then every refresh interval, retried with
// backoff after a failure (the last keys stay in use meanwhile). It does
// the I/O only; what a token must satisfy is decided by jwt.Validate.
type jwksSource struct {
	cfg    *config.OAuthBearer
	client *http.Client
	log    *slog.Logger
	keys   atomic.Pointer[jwt.KeySet]
	// kicks asks run for an early fetch: a token named a key the set
	// does not hold. Buffered one: kicks while one is pending merge.
	kicks chan struct{}
}

func newJWKSSource(cfg *config.OAuthBearer, roots *x509.CertPool, log *slog.Logger) *jwksSource {
	transport := &http.Transport{
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots},
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: jwksFetchTimeout,
	}
	return &jwksSource{cfg: cfg, log: log, kicks: make(chan struct{}, 1), client: &http.Client{
		Timeout:   jwksFetchTimeout,
		Transport: transport,
		// A JWKS endpoint that redirects elsewhere is followed only to
		// another https:// URL.
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Scheme != "https" || len(via) >= 3 {
				return fmt.Errorf("JWKS redirect to %s refused", req.URL.Redacted())
			}
			return nil
		},
	}}
}

// validator is what a connection's session validates tokens with now.
func (j *jwksSource) validator() sasl.OAuthValidator {
	return sasl.OAuthValidator{Keys: j.keys.Load(), Policy: jwt.Policy{
		Audience: j.cfg.Audience, Issuer: j.cfg.Issuer,
		SubjectClaim: j.cfg.SubjectClaim, ScopeClaim: j.cfg.ScopeClaim, ClockSkew: j.cfg.ClockSkew,
	}}
}

// load fetches and parses the key set once, and installs it.
func (j *jwksSource) load(ctx context.Context) error {
	data, err := j.fetch(ctx)
	if err != nil {
		return err
	}
	set, err := jwt.ParseKeySet(data)
	if err != nil {
		return fmt.Errorf("JWKS from %s: %w", j.cfg.JWKSURL.Redacted(), err)
	}
	j.keys.Store(set)
	j.log.Info("OAUTHBEARER JWKS loaded", "url", j.cfg.JWKSURL.Redacted(), "keys", len(set.Keys), "skipped", set.Skipped)
	return nil
}

func (j *jwksSource) fetch(ctx context.Context) ([]byte, error) {
	var body io.ReadCloser
	switch j.cfg.JWKSURL.Scheme {
	case "file":
		f, err := os.Open(j.cfg.JWKSURL.Path)
		if err != nil {
			return nil, fmt.Errorf("JWKS file: %w", err)
		}
		body = f
	case "https":
		ctx, cancel := context.WithTimeout(ctx, jwksFetchTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.cfg.JWKSURL.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("JWKS request: %w", err)
		}
		req.Header.Set("Accept", "application/json")
		resp, err := j.client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("JWKS fetch: %w", err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("JWKS fetch from %s: HTTP %s", j.cfg.JWKSURL.Redacted(), resp.Status)
		}
		body = resp.Body
	default:
		return nil, fmt.Errorf("JWKS URL scheme %q", j.cfg.JWKSURL.Scheme) // config refuses others
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, jwt.MaxKeySetBytes+1))
	if err != nil {
		return nil, fmt.Errorf("JWKS read from %s: %w", j.cfg.JWKSURL.Redacted(), err)
	}
	if len(data) > jwt.MaxKeySetBytes {
		return nil, fmt.Errorf("JWKS from %s is over the %d-byte limit", j.cfg.JWKSURL.Redacted(), jwt.MaxKeySetBytes)
	}
	return data, nil
}

// kick asks for the key set to be fetched again soon; it never blocks.
func (j *jwksSource) kick() {
	select {
	case j.kicks <- struct{}{}:
	default:
	}
}

// run keeps the key set current until ctx ends: the first load was tried
// by the caller (first is its error); a failure is retried after
// retry.backoff.ms, doubling up to retry.backoff.max.ms, a success
// waits refresh.ms. A kick (a token signed by a key the set lacks: the
// provider rotated one in) fetches early, but at most once per
// retry.backoff.max.ms, so tokens naming made-up kids cannot make the
// broker hammer the provider.
func (j *jwksSource) run(ctx context.Context, first error) {
	backoff := j.cfg.RetryBackoff
	err := first
	lastFetch := time.Now()
	for {
		wait := j.cfg.Refresh
		if err != nil {
			j.log.Error("OAUTHBEARER JWKS not loaded; tokens are refused until it is, unless an earlier one is still in use",
				"url", j.cfg.JWKSURL.Redacted(), "error", err, "retry_in", backoff, "have_keys", j.keys.Load() != nil)
			wait = backoff
			backoff = min(2*backoff, j.cfg.RetryBackoffMax)
		} else {
			backoff = j.cfg.RetryBackoff
		}
		t := time.NewTimer(wait)
	waiting:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
				break waiting
			case <-j.kicks:
				if time.Since(lastFetch) >= j.cfg.RetryBackoffMax {
					t.Stop()
					j.log.Info("OAUTHBEARER JWKS fetched early: a token named a key it does not hold", "url", j.cfg.JWKSURL.Redacted())
					break waiting
				}
			}
		}
		lastFetch = time.Now()
		err = j.load(ctx)
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return
		}
	}
}

// loadOAuth makes the OAUTHBEARER key source, when a SASL listener
// offers OAUTHBEARER, and tries its first load; runOAuth then keeps it
// refreshed (started with the other background work, so a failed Start
// leaves no goroutine behind).
func (b *Broker) loadOAuth() error {
	if b.cfg.OAuthBearer == nil {
		return nil
	}
	b.jwks = newJWKSSource(b.cfg.OAuthBearer, b.opts.JWKSRootCAs, b.log)
	return b.jwks.load(b.stopCtx)
}

func (b *Broker) runOAuth(first error) {
	if b.jwks == nil {
		return
	}
	b.bgWG.Add(1)
	go func() {
		defer b.bgWG.Done()
		b.jwks.run(b.stopCtx, first)
	}()
}
