package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/testcert"
)

// tlsBroker is a broker with a PLAINTEXT listener (for the harness and
// inter-broker traffic) and an SSL listener requiring client certificates
// from ca.
type tlsBroker struct {
	*testBroker
	ca, other *testcert.CA
	server    testcert.Leaf
	alice     testcert.Leaf
	mallory   testcert.Leaf // signed by another CA
	sslAddr   string
}

func startTLSBroker(t *testing.T, opts ...brokerOption) *tlsBroker {
	t.Helper()
	dir := t.TempDir()
	tb := &tlsBroker{ca: testcert.NewCA(t, dir, "ca"), other: testcert.NewCA(t, dir, "other")}
	tb.server = tb.ca.Issue("server", pkix.Name{CommonName: "broker-1"})
	tb.alice = tb.ca.Issue("alice", pkix.Name{CommonName: "alice", Organization: []string{"Skein"}})
	tb.mallory = tb.other.Issue("mallory", pkix.Name{CommonName: "mallory"})
	opts = append([]brokerOption{
		withProp("listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0", freePort(t))),
		withProp("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT"),
		withProp("inter.broker.listener.name", "PLAINTEXT"),
		withProp("ssl.keystore.type", "PEM"),
		withProp("ssl.keystore.location", tb.server.File),
		withProp("listener.name.ssl.ssl.truststore.type", "PEM"),
		withProp("listener.name.ssl.ssl.truststore.location", tb.ca.CertFile),
		withProp("listener.name.ssl.ssl.client.auth", "required"),
		withProp("admin.listeners", "http://127.0.0.1:0"),
	}, opts...)
	tb.testBroker = startBroker(t, opts...)
	tb.sslAddr = tb.b.Addr("SSL")
	return tb
}

// clientTLS trusts the broker's CA and presents leaf (if any), even when
// the broker does not name its issuer as acceptable.
func (tb *tlsBroker) clientTLS(leaf *testcert.Leaf) *tls.Config {
	c := &tls.Config{RootCAs: tb.ca.Pool(), ServerName: "127.0.0.1"}
	if leaf != nil {
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &leaf.TLS, nil }
	}
	return c
}

func (tb *tlsBroker) metrics(t *testing.T) string {
	t.Helper()
	resp, err := http.Get("http://" + tb.b.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// TestMutualTLSClients: franz-go, sarama and kcat produce and consume over
// an SSL listener with client certificates, and the broker's certificate
// is renewed in place without a restart.
func TestMutualTLSClients(t *testing.T) {
	tb := startTLSBroker(t)
	ctx := testContext(t, 60*time.Second)
	const topic = "mtls"
	tb.createTopic(topic, 1, nil)

	// franz-go.
	cl := tb.client(kgo.SeedBrokers(tb.sslAddr), kgo.DialTLSConfig(tb.clientTLS(&tb.alice)), kgo.DefaultProduceTopic(topic))
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "franz-%d", i)}).FirstErr(); err != nil {
			t.Fatalf("franz-go produce over mTLS: %v", err)
		}
	}

	// sarama.
	scfg := saramaConfig()
	scfg.Net.TLS.Enable = true
	scfg.Net.TLS.Config = tb.clientTLS(&tb.alice)
	scfg.Producer.Return.Successes = true
	scfg.Producer.RequiredAcks = sarama.WaitForAll
	p, err := sarama.NewSyncProducer([]string{tb.sslAddr}, scfg)
	if err != nil {
		t.Fatalf("sarama producer over mTLS: %v", err)
	}
	for i := range 10 {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprintf("sarama-%d", i))}); err != nil {
			t.Fatalf("sarama produce over mTLS: %v", err)
		}
	}
	p.Close()
	sc, err := sarama.NewConsumer([]string{tb.sslAddr}, scfg)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := sc.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		select {
		case <-pc.Messages():
		case err := <-pc.Errors():
			t.Fatalf("sarama consume over mTLS: %v", err)
		case <-ctx.Done():
			t.Fatalf("sarama consumed %d of 20", i)
		}
	}
	pc.Close()
	sc.Close()

	// kcat (librdkafka's own TLS).
	kcat := requireCommand(t, "kcat")
	sslArgs := []string{"-b", tb.sslAddr, "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + tb.ca.CertFile,
		"-X", "ssl.certificate.location=" + tb.alice.File, "-X", "ssl.key.location=" + tb.alice.File}
	prod := exec.CommandContext(ctx, kcat, append(sslArgs, "-P", "-t", topic, "-X", "acks=all")...)
	prod.Stdin = strings.NewReader("kcat-0\nkcat-1\n")
	if out, err := prod.CombinedOutput(); err != nil || strings.Contains(string(out), "ERROR") {
		t.Fatalf("kcat produce over mTLS: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, kcat, append(sslArgs, "-C", "-t", topic, "-o", "beginning", "-c", "22", "-e", "-q")...).CombinedOutput()
	if err != nil {
		t.Fatalf("kcat consume over mTLS: %v\n%s", err, out)
	}
	for _, want := range []string{"franz-0", "sarama-9", "kcat-1"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kcat consumed no %s:\n%s", want, out)
		}
	}

	// Renew the broker's certificate in place: the next connection gets
	// the new one, the open franz-go connection keeps working.
	renewed := tb.ca.Issue("renewed", pkix.Name{CommonName: "broker-1-renewed"})
	data, err := os.ReadFile(renewed.File)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(tb.server.File)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tb.server.File, data, 0o600); err != nil {
		t.Fatal(err)
	}
	later := fi.ModTime().Add(time.Second) // past the file system's time granularity
	if err := os.Chtimes(tb.server.File, later, later); err != nil {
		t.Fatal(err)
	}
	tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", tb.sslAddr, tb.clientTLS(&tb.alice))
	if err != nil {
		t.Fatal(err)
	}
	if cn := tc.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "broker-1-renewed" {
		t.Errorf("after renewal the broker presents %q", cn)
	}
	tc.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after-renewal")}).FirstErr(); err != nil {
		t.Fatalf("produce after renewal: %v", err)
	}
}

// TestTLSRefusals: a plaintext client on the TLS port, a TLS hello on the
// plaintext port, a handshake that never completes, a client without a
// certificate and one with an untrusted certificate are each closed
// quickly and counted, while a client on an open connection keeps going.
func TestTLSRefusals(t *testing.T) {
	const handshakeTimeout = 300 * time.Millisecond
	tb := startTLSBroker(t, withProp("ssl.handshake.timeout.ms", fmt.Sprint(handshakeTimeout.Milliseconds())))
	ctx := testContext(t, 30*time.Second)
	const topic = "tls-refusals"
	tb.createTopic(topic, 1, nil)
	good := tb.client(kgo.SeedBrokers(tb.sslAddr), kgo.DialTLSConfig(tb.clientTLS(&tb.alice)), kgo.DefaultProduceTopic(topic))
	produce := func(v string) {
		t.Helper()
		if err := good.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	produce("before")

	// A plaintext Kafka client on the TLS port.
	plain := dialRaw(t, tb.sslAddr)
	plain.send(kmsg.NewPtrApiVersionsRequest(), 1)
	closedWithin(t, plain, 5*time.Second)

	// A TLS client on the plaintext port.
	hello := tls.Client(dialRaw(t, tb.addr).nc, tb.clientTLS(&tb.alice))
	hello.SetDeadline(time.Now().Add(5 * time.Second))
	if err := hello.Handshake(); err == nil {
		t.Error("TLS handshake succeeded on the PLAINTEXT listener")
	}

	// A connection that never starts its handshake.
	silent := dialRaw(t, tb.sslAddr)
	produce("while-silent")
	if took := closedWithin(t, silent, 5*time.Second); took > handshakeTimeout+2*time.Second {
		t.Errorf("silent connection closed after %v; ssl.handshake.timeout.ms is %v", took, handshakeTimeout)
	}

	// No client certificate, and one from an untrusted CA: the handshake
	// (or, in TLS 1.3, the first read after it) fails.
	for _, leaf := range []*testcert.Leaf{nil, &tb.mallory} {
		err := franzAgainst(ctx, tb.sslAddr, tb.clientTLS(leaf))
		switch {
		case err == nil:
			t.Errorf("client with certificate %v was served", leaf != nil)
		case errors.Is(err, context.DeadlineExceeded):
			t.Errorf("client with certificate %v: %v", leaf != nil, err)
		}
	}
	produce("after")

	m := tb.metrics(t)
	for _, reason := range []string{"plaintext_on_tls", "timeout", "no_client_certificate", "untrusted_certificate"} {
		if !strings.Contains(m, fmt.Sprintf(`skein_tls_handshake_failures_total{listener="SSL",reason="%s"}`, reason)) {
			t.Errorf("no TLS failure counted for %s", reason)
		}
	}
	if !strings.Contains(m, `skein_tls_handshake_failures_total{listener="PLAINTEXT",reason="tls_on_plaintext"} 1`) {
		t.Error("TLS hello on the plaintext listener not counted")
	}
	consumeCount(t, tb.testBroker, topic, 3)
}

// franzAgainst makes one metadata request with a fresh client.
func franzAgainst(ctx context.Context, addr string, cfg *tls.Config) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(cfg), kgo.RequestRetries(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("hung instead of being refused: %w", err)
	}
	return err
}

// TestCertificatePrincipal: ssl.principal.mapping.rules turns alice's
// certificate (CN=alice,O=Skein) into User:alice, a super user the
// authorizer lets create a topic; a trusted certificate no rule applies to
// is refused at the handshake, as Kafka refuses it.
func TestCertificatePrincipal(t *testing.T) {
	tb := startTLSBroker(t,
		withProp("ssl.principal.mapping.rules", "RULE:^CN=([^,]*),O=Skein$/$1/L"),
		withProp("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
		withProp("super.users", "User:alice"),
		withProp("allow.everyone.if.no.acl.found", "false"))
	ctx := testContext(t, 30*time.Second)
	alice := tb.client(kgo.SeedBrokers(tb.sslAddr), kgo.DialTLSConfig(tb.clientTLS(&tb.alice)))
	adm := kadm.NewClient(alice)
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "by-certificate"); err != nil || r.Err != nil {
		t.Fatalf("User:alice's CreateTopics: %v %v", err, r.Err)
	}
	bob := tb.ca.Issue("bob", pkix.Name{CommonName: "bob", Organization: []string{"Other"}})
	if err := franzAgainst(ctx, tb.sslAddr, tb.clientTLS(&bob)); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a certificate no rule maps: %v", err)
	}
	// At least once: the client may dial more than once before it gives up.
	if n, _ := metricSum(t, tb.testBroker, "skein_tls_handshake_failures_total", "reason", "principal_mapping"); n < 1 {
		t.Error("the refused certificate was not counted")
	}
}
