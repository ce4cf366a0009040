package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/testcluster"
)

// saslMetric reads one skein_sasl_authentications_total counter (0 when
// it was never counted).
func saslMetric(t *testing.T, tb *testBroker, listener, mechanism, result string) int {
	t.Helper()
	m := (&tlsBroker{testBroker: tb}).metrics(t)
	re := regexp.MustCompile(`(?m)^skein_sasl_authentications_total\{listener="` + listener + `",mechanism="` + mechanism +
		`",result="` + result + `"\} (\d+)$`)
	got := re.FindStringSubmatch(m)
	if got == nil {
		return 0
	}
	n, _ := strconv.Atoi(got[1])
	return n
}

// connectCounter counts the connections a franz-go client opens.
type connectCounter struct{ n atomic.Int32 }

func (c *connectCounter) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		c.n.Add(1)
	}
}

// TestReauthenticationFranz: with connections.max.reauth.ms, franz-go
// learns the session lifetime from SaslAuthenticate and logs in again on
// the same connections before it passes, so producing and consuming go on
// without a new connection; once the SCRAM user is deleted, the next
// re-authentication fails and the open connections are closed (KIP-368's
// point: revoking a credential reaches connections already logged in).
func TestReauthenticationFranz(t *testing.T) {
	const lifetime = 1500 * time.Millisecond
	tb, ca, addr := startSASLBroker(t, &testcluster.Buffer{},
		withProp("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512"),
		withProp("listener.name.sasl_ssl.scram-sha-512.connections.max.reauth.ms", strconv.Itoa(int(lifetime.Milliseconds()))))
	ctx := testContext(t, 60*time.Second)
	const topic = "reauth-franz"
	tb.createTopic(topic, 1, nil)
	adm := kadm.NewClient(tb.client())
	alter := func(del []kadm.DeleteSCRAM, up []kadm.UpsertSCRAM) {
		t.Helper()
		res, err := adm.AlterUserSCRAMs(ctx, del, up)
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatalf("AlterUserScramCredentials: %v", err)
		}
	}
	alter(nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: bobPassword}})
	awaitImage(ctx, t, tb.b, "bob's credential", func(im *metadata.Image) bool {
		_, ok := im.ScramCredential("SCRAM-SHA-512", "bob")
		return ok
	})

	clientLog := &testcluster.Buffer{}
	connects := &connectCounter{}
	cl := tb.client(kgo.SeedBrokers(addr), kgo.DialTLSConfig((&tlsBroker{ca: ca}).clientTLS(nil)),
		kgo.SASL(scram.Auth{User: "bob", Pass: bobPassword}.AsSha512Mechanism()),
		kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.WithHooks(connects), kgo.WithLogger(kgo.BasicLogger(clientLog, kgo.LogLevelDebug, nil)))

	produced, consumed := 0, 0
	step := func() error {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "r-%d", produced)}).FirstErr(); err != nil {
			return err
		}
		produced++
		fetches := cl.PollFetches(ctx)
		if err := fetches.Err0(); err != nil {
			return err
		}
		consumed += fetches.NumRecords()
		return nil
	}
	// Until every connection logged in again a few times: each poll
	// long-polls for at most FetchMaxWait, so the loop follows the
	// client's own pace.
	const rounds = 3
	for saslMetric(t, tb, "SASL_SSL", "SCRAM-SHA-512", "reauthentication_success") < rounds {
		if err := step(); err != nil {
			t.Fatalf("produce/consume while re-authenticating (%d produced): %v", produced, err)
		}
	}
	opened := connects.n.Load()
	before := saslMetric(t, tb, "SASL_SSL", "SCRAM-SHA-512", "reauthentication_success")
	for saslMetric(t, tb, "SASL_SSL", "SCRAM-SHA-512", "reauthentication_success") < before+rounds {
		if err := step(); err != nil {
			t.Fatalf("produce/consume while re-authenticating: %v", err)
		}
	}
	if got := connects.n.Load(); got != opened {
		t.Errorf("the client opened %d connections while re-authenticating, want none (they re-authenticate in place)", got-opened)
	}
	if !strings.Contains(clientLog.String(), "sasl expiry limit reached, reauthenticating") {
		t.Error("franz-go did not log a re-authentication")
	}
	if n := saslMetric(t, tb, "SASL_SSL", "SCRAM-SHA-512", "expired"); n != 0 {
		t.Errorf("%d connections closed as expired; franz-go re-authenticates in time", n)
	}
	for consumed < produced {
		fetches := cl.PollFetches(ctx)
		if err := fetches.Err0(); err != nil {
			t.Fatal(err)
		}
		consumed += fetches.NumRecords()
	}

	// Revoke bob: within one lifetime his connections fail to log in
	// again, and so do new ones.
	alter([]kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha512}}, nil)
	awaitImage(ctx, t, tb.b, "bob's credential deleted", func(im *metadata.Image) bool {
		_, ok := im.ScramCredential("SCRAM-SHA-512", "bob")
		return !ok
	})
	revoked := time.Now()
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := cl.ProduceSync(pctx, &kgo.Record{Value: []byte("after revocation")}).FirstErr()
		cancel()
		if errors.Is(err, kerr.SaslAuthenticationFailed) {
			break
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("after revocation: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
		if time.Since(revoked) > 5*lifetime {
			t.Fatalf("bob still produces %v after his credential was deleted (lifetime %v)", time.Since(revoked), lifetime)
		}
	}
	if saslMetric(t, tb, "SASL_SSL", "SCRAM-SHA-512", "reauthentication_failure") == 0 {
		t.Error("no failed re-authentication counted")
	}
}

// reauthConn is a raw SASL_SSL connection logged in with PLAIN.
type reauthConn struct {
	*rawConn
	corr int32
}

func dialReauth(t *testing.T, addr string, cfg *tls.Config) *reauthConn {
	t.Helper()
	rc := dialRaw(t, addr)
	tc := tls.Client(rc.nc, cfg)
	rc.nc = tc
	return &reauthConn{rawConn: rc}
}

func (c *reauthConn) roundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	c.corr++
	c.send(req, c.corr)
	return c.receive(req, c.corr)
}

// login runs SaslHandshake v1 and one SaslAuthenticate of the given
// version, and returns the answer.
func (c *reauthConn) login(user, pass string, version int16) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if r := c.roundTrip(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		c.t.Fatalf("SaslHandshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	return c.authenticate(user, pass, version)
}

func (c *reauthConn) authenticate(user, pass string, version int16) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = version, []byte("\x00"+user+"\x00"+pass)
	return c.roundTrip(auth).(*kmsg.SASLAuthenticateResponse)
}

func (c *reauthConn) metadata() {
	c.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	c.roundTrip(req)
}

func (c *reauthConn) sendMetadata() {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	c.corr++
	c.send(req, c.corr)
}

// TestReauthenticationRawSocket: KIP-368 on the wire. SaslAuthenticate
// v1+ answers the session lifetime (v0 cannot carry it); after it, any
// request but a SaslHandshake closes the connection; a re-authentication
// is served on the same connection, also after the lifetime passed and
// while an earlier long-poll Fetch is still owed its answer, which comes
// first; a request in the middle of a re-authentication, a change of
// user and a handshake from a client that never used SaslAuthenticate v1
// are each answered as Kafka answers them. The broker's sessions are
// judged by a clock the test moves: the lifetime passes when it says so,
// and no sooner however slow the machine.
func TestReauthenticationRawSocket(t *testing.T) {
	const lifetime = time.Hour
	clock := newManualClock()
	tb, ca, addr := startSASLBroker(t, &testcluster.Buffer{}, withAuthClock(clock),
		withProp("connections.max.reauth.ms", strconv.Itoa(int(lifetime.Milliseconds()))))
	const topic = "reauth-raw"
	tb.createTopic(topic, 1, nil)
	cfg := (&tlsBroker{ca: ca}).clientTLS(nil)
	dial := func(version int16) *reauthConn {
		c := dialReauth(t, addr, cfg)
		r := c.login("alice", alicePassword, version)
		want := lifetime.Milliseconds()
		if version == 0 {
			want = 0 // not in v0
		}
		if r.ErrorCode != 0 || r.SessionLifetimeMillis != want {
			t.Fatalf("login with SaslAuthenticate v%d: %v, session_lifetime_ms %d, want %d", version, kerr.ErrorForCode(r.ErrorCode), r.SessionLifetimeMillis, want)
		}
		return c
	}
	expired, renewed, midway, otherUser, inFlight := dial(2), dial(1), dial(2), dial(2), dial(2)
	oldClient := dial(0)

	// Before the lifetime ends everything is served; a client that never
	// sent SaslAuthenticate v1 cannot re-authenticate (Kafka answers
	// ILLEGAL_SASL_STATE and the connection goes on).
	expired.metadata()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if r := oldClient.roundTrip(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake from a v0 SaslAuthenticate client: %v, want ILLEGAL_SASL_STATE", kerr.ErrorForCode(r.ErrorCode))
	}
	oldClient.metadata()

	// A long-poll fetch, then a re-authentication pipelined behind it:
	// the answers come in request order, the fetch's first.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes, fetch.ReplicaID = 12, 500, 1, 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 2, []byte("\x00alice\x00"+alicePassword)
	sent := time.Now()
	inFlight.send(fetch, 101)
	inFlight.send(hs, 102)
	inFlight.send(auth, 103)
	if r := inFlight.receive(fetch, 101).(*kmsg.FetchResponse); r.ErrorCode != 0 || len(r.Topics) != 1 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("the fetch before the re-authentication: %+v", r)
	}
	if took := time.Since(sent); took < 500*time.Millisecond {
		t.Errorf("the fetch was answered after %v, before its max wait: it did not wait on the empty partition", took)
	}
	if r := inFlight.receive(hs, 102).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("re-authentication handshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := inFlight.receive(auth, 103).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 || r.SessionLifetimeMillis != lifetime.Milliseconds() {
		t.Fatalf("re-authentication: %v lifetime %d", kerr.ErrorForCode(r.ErrorCode), r.SessionLifetimeMillis)
	}
	inFlight.metadata()

	// Re-authenticating as another user is refused, as Kafka refuses it.
	if r := otherUser.login("admin", "admin-pw", 2); r.ErrorCode != kerr.SaslAuthenticationFailed.Code ||
		r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "Cannot change principals") {
		t.Fatalf("re-authentication as another user: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	otherUser.expectClosed()

	// Every login so far happened at the clock's start: now they have
	// all reached their lifetime.
	clock.Advance(lifetime)
	expired.sendMetadata()
	expired.expectClosed()
	oldClient.sendMetadata()
	oldClient.expectClosed()
	if r := renewed.login("alice", alicePassword, 1); r.ErrorCode != 0 || r.SessionLifetimeMillis != lifetime.Milliseconds() {
		t.Fatalf("re-authentication after the lifetime: %v lifetime %d", kerr.ErrorForCode(r.ErrorCode), r.SessionLifetimeMillis)
	}
	renewed.metadata()
	if r := midway.roundTrip(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("re-authentication handshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	midway.sendMetadata()
	midway.expectClosed()

	for result, want := range map[string]int{"success": 6, "reauthentication_success": 2, "reauthentication_failure": 2, "expired": 2} {
		if got := saslMetric(t, tb, "SASL_SSL", "PLAIN", result); got != want {
			t.Errorf("skein_sasl_authentications_total{result=%q} = %d, want %d", result, got, want)
		}
	}
}

// TestReauthenticationSarama: sarama also re-authenticates in place
// (SaslHandshake v1 and SaslAuthenticate on the open connection, at 85-95%
// of session_lifetime_ms, as the Java client): it produces across several
// lifetimes and no connection is closed as expired.
func TestReauthenticationSarama(t *testing.T) {
	const lifetime = time.Second
	tb, ca, addr := startSASLBroker(t, &testcluster.Buffer{},
		withProp("listener.name.sasl_ssl.plain.connections.max.reauth.ms", strconv.Itoa(int(lifetime.Milliseconds()))))
	const topic = "reauth-sarama"
	tb.createTopic(topic, 1, nil)
	scfg := saramaConfig()
	scfg.Net.TLS.Enable = true
	scfg.Net.TLS.Config = (&tlsBroker{ca: ca}).clientTLS(nil)
	scfg.Net.SASL.Enable = true
	scfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	scfg.Net.SASL.Version = sarama.SASLHandshakeV1
	scfg.Net.SASL.User, scfg.Net.SASL.Password = "alice", alicePassword
	scfg.Producer.Return.Successes = true
	scfg.Producer.RequiredAcks = sarama.WaitForAll
	p, err := sarama.NewSyncProducer([]string{addr}, scfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// sarama re-authenticates before a request once 85-95% of the
	// lifetime passed on its own clock, so requests are what drive it
	// (nothing here waits for time to pass): produce until the broker has
	// counted two re-authentications and the connection has been in use
	// across two lifetimes of the broker's wall clock. A client late to
	// re-authenticate would meet its connection closed as expired.
	ctx := testContext(t, 60*time.Second)
	start, sent := time.Now(), 0
	for saslMetric(t, tb, "SASL_SSL", "PLAIN", "reauthentication_success") < 2 || time.Since(start) < 2*lifetime {
		if ctx.Err() != nil {
			t.Fatalf("no second re-authentication after %d records", sent)
		}
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprintf("m%d", sent))}); err != nil {
			t.Fatalf("sarama produce %d across session lifetimes: %v", sent, err)
		}
		sent++
	}
	if n := saslMetric(t, tb, "SASL_SSL", "PLAIN", "expired"); n != 0 {
		t.Errorf("%d connections closed as expired", n)
	}
	consumeCount(t, tb, topic, sent)
}
