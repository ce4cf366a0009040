package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/skein-log/skein/internal/jwttest"
	"github.com/skein-log/skein/internal/testcert"
	"github.com/skein-log/skein/internal/testcluster"
)

const (
	oauthIssuer   = "https://idp.skein.test"
	oauthAudience = "skein-cluster"
)

// issue signs a token for sub as the test's identity provider would.
func issue(t *testing.T, key jwttest.Key, sub string, lifetime time.Duration, extra map[string]any) string {
	now := time.Now()
	c := map[string]any{"sub": sub, "iss": oauthIssuer, "aud": oauthAudience, "iat": now.Unix(),
		"exp": now.Add(lifetime).Unix(), "scope": "kafka"}
	for k, v := range extra {
		c[k] = v
	}
	return key.Sign(t, c)
}

// publish writes the JWKS file of the test's identity provider.
func publish(t *testing.T, path string, keys ...jwttest.Key) {
	t.Helper()
	if err := os.WriteFile(path, jwttest.KeySet(t, keys...), 0o600); err != nil {
		t.Fatal(err)
	}
}

// startOAuthBroker starts startSASLBroker's broker offering OAUTHBEARER
// too, configured with Kafka's KIP-768 properties as its documentation
// writes them, validating tokens against a JWKS file publishing key.
func startOAuthBroker(t *testing.T, log *testcluster.Buffer, key jwttest.Key, extra ...brokerOption) (*testBroker, *testcert.CA, string) {
	t.Helper()
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	publish(t, jwks, key, jwttest.EC(t, "idp-ec", "ES256"))
	return startOAuthBrokerWith(t, log, jwks, extra...)
}

// startOAuthBrokerWith is startOAuthBroker reading the JWKS file at jwks.
func startOAuthBrokerWith(t *testing.T, log *testcluster.Buffer, jwks string, extra ...brokerOption) (*testBroker, *testcert.CA, string) {
	t.Helper()
	return startSASLBroker(t, log, append([]brokerOption{
		withProp("sasl.enabled.mechanisms", "PLAIN,OAUTHBEARER"),
		withProp("listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class",
			"org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"),
		withProp("listener.name.sasl_ssl.oauthbearer.sasl.jaas.config",
			"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;"),
		withProp("sasl.oauthbearer.jwks.endpoint.url", "file://"+jwks),
		withProp("sasl.oauthbearer.expected.audience", oauthAudience),
		withProp("sasl.oauthbearer.expected.issuer", oauthIssuer),
	}, extra...)...)
}

// TestOAuthBearerClients: a broker configured with Kafka's KIP-768
// properties, as its documentation writes them, authenticates franz-go's
// OAUTHBEARER over SASL_SSL against a JWKS file; the token's subject is
// the principal the authorizer checks; a bad token is refused with
// SASL_AUTHENTICATION_FAILED, counted, and never logged.
func TestOAuthBearerClients(t *testing.T) {
	idp := jwttest.RSA(t, "idp-2026", "RS256")
	log := &testcluster.Buffer{}
	tb, ca, addr := startOAuthBroker(t, log, idp,
		withProp("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
		withProp("super.users", "User:admin"),
		withProp("allow.everyone.if.no.acl.found", "false"))
	ctx := testContext(t, 60*time.Second)
	tlsCfg := (&tlsBroker{ca: ca}).clientTLS(nil)
	with := func(token string, opts ...kgo.Opt) *kgo.Client {
		return tb.client(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsCfg),
			kgo.SASL(oauth.Auth{Token: token}.AsMechanism())}, opts...)...)
	}
	adminToken := issue(t, idp, "admin", time.Hour, nil)
	adm := kadm.NewClient(with(adminToken))
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "oauth-guarded"); err != nil || r.Err != nil {
		t.Fatalf("the super user's CreateTopics with a token: %v %v", err, r.Err)
	}
	alice := with(issue(t, idp, "alice", time.Hour, nil), kgo.DefaultProduceTopic("oauth-guarded"), kgo.RecordRetries(0))
	if err := alice.ProduceSync(ctx, &kgo.Record{Value: []byte("denied")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	grantWrite(ctx, t, tb, adm, "User:alice", "oauth-guarded")
	if err := alice.ProduceSync(ctx, &kgo.Record{Value: []byte("allowed")}).FirstErr(); err != nil {
		t.Fatalf("alice with a WRITE ACL: %v", err)
	}

	// Refused tokens: each answered with Kafka's error challenge, then
	// SASL_AUTHENTICATION_FAILED, and the connection closed.
	stranger := jwttest.RSA(t, "idp-2026", "RS256")
	bad := map[string]string{
		"expired":        issue(t, idp, "alice", -time.Hour, map[string]any{"iat": time.Now().Add(-2 * time.Hour).Unix()}),
		"wrong audience": issue(t, idp, "alice", time.Hour, map[string]any{"aud": "billing"}),
		"wrong issuer":   issue(t, idp, "alice", time.Hour, map[string]any{"iss": "https://evil.test"}),
		"foreign key":    issue(t, stranger, "admin", time.Hour, nil),
		"not a JWT":      "definitely-not-a-jwt",
	}
	for name, token := range bad {
		cl := with(token, kgo.RequestRetries(0))
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(rctx, cl)
		cancel()
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "invalid_token") {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED with invalid_token", name, err)
		}
	}

	logs := log.String()
	for _, token := range append([]string{adminToken}, bad["foreign key"], bad["expired"]) {
		if strings.Contains(logs, token) || strings.Contains(logs, strings.Split(token, ".")[2]) {
			t.Error("the broker log holds a bearer token")
		}
	}
	for _, want := range []string{"principal=User:alice", "the token expired", "audience", "does not verify"} {
		if !strings.Contains(logs, want) {
			t.Errorf("no log line with %q", want)
		}
	}
	m := (&tlsBroker{testBroker: tb}).metrics(t)
	for _, want := range []string{
		`skein_sasl_authentications_total{listener="SASL_SSL",mechanism="OAUTHBEARER",result="failure"} 5`,
		`skein_sasl_authentications_total{listener="SASL_SSL",mechanism="OAUTHBEARER",result="success"}`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestOAuthBearerReauthentication: KIP-368 with OAUTHBEARER: the session
// lasts as long as the token (no connections.max.reauth.ms is set), so
// franz-go fetches a fresh token and logs in again on the same
// connection before each one expires, and no connection is closed.
func TestOAuthBearerReauthentication(t *testing.T) {
	idp := jwttest.RSA(t, "idp-2026", "RS256")
	tb, ca, addr := startOAuthBroker(t, &testcluster.Buffer{}, idp)
	ctx := testContext(t, 60*time.Second)
	const topic = "oauth-reauth"
	tb.createTopic(topic, 1, nil)
	var issued atomic.Int32
	connects := &connectCounter{}
	cl := tb.client(kgo.SeedBrokers(addr), kgo.DialTLSConfig((&tlsBroker{ca: ca}).clientTLS(nil)),
		kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			issued.Add(1)
			// exp is in whole seconds: this token lives 2 to 3 seconds.
			return oauth.Auth{Token: issue(t, idp, "alice", 3*time.Second, nil)}, nil
		})),
		kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond), kgo.WithHooks(connects))
	produce := func() {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("r")}).FirstErr(); err != nil {
			t.Fatalf("produce while re-authenticating with fresh tokens: %v", err)
		}
		// Each poll long-polls for at most FetchMaxWait, so the loop
		// follows the client's own pace.
		if err := cl.PollFetches(ctx).Err0(); err != nil {
			t.Fatalf("consume while re-authenticating with fresh tokens: %v", err)
		}
	}
	produce()
	opened := connects.n.Load()
	// The client re-authenticates lazily, at its first request after
	// its own deadline: produce until the broker counted two renewals.
	for saslMetric(t, tb, "SASL_SSL", "OAUTHBEARER", "reauthentication_success") < 2 {
		produce()
	}
	if got := connects.n.Load(); got != opened {
		t.Errorf("the client opened %d connections while re-authenticating, want none", got-opened)
	}
	if n := saslMetric(t, tb, "SASL_SSL", "OAUTHBEARER", "expired"); n != 0 {
		t.Errorf("%d connections closed as expired", n)
	}
	if issued.Load() < 3 {
		t.Errorf("%d tokens issued, want a fresh one per login", issued.Load())
	}
}

// TestOAuthBearerKeyRotation: the provider rotates in a new key and signs
// with it before the broker's next scheduled refresh (an hour away): the
// first token naming the unknown kid is refused and makes the broker
// fetch the JWKS early, so the next login with it succeeds.
func TestOAuthBearerKeyRotation(t *testing.T) {
	old, rotated := jwttest.RSA(t, "idp-2025", "RS256"), jwttest.RSA(t, "idp-2026", "RS256")
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	publish(t, jwks, old)
	log := &testcluster.Buffer{}
	tb, ca, addr := startOAuthBrokerWith(t, log, jwks,
		withProp("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", "100"))
	ctx := testContext(t, 30*time.Second)
	tlsCfg := (&tlsBroker{ca: ca}).clientTLS(nil)
	login := func(key jwttest.Key) error {
		cl := tb.client(kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsCfg), kgo.RequestRetries(0),
			kgo.SASL(oauth.Auth{Token: issue(t, key, "alice", time.Hour, nil)}.AsMechanism()))
		defer cl.Close()
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(rctx, cl)
		return err
	}
	if err := login(old); err != nil {
		t.Fatalf("a token of the published key: %v", err)
	}
	publish(t, jwks, old, rotated)
	for {
		err := login(rotated)
		if err == nil {
			break
		}
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("a token of the rotated-in key: %v", err)
		}
		if ctx.Err() != nil {
			t.Fatal("the rotated-in key was never fetched")
		}
	}
	if !strings.Contains(log.String(), "OAUTHBEARER JWKS fetched early") {
		t.Error("no early fetch logged")
	}
}
