package e2e

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/testcert"
	"github.com/skein-log/skein/internal/testcluster"
)

const (
	alicePassword = "alice-S3cret-pw"
	wrongPassword = "wr0ng-Guess-pw"
)

// startSASLBroker starts a broker with a SASL_SSL listener authenticating
// PLAIN users from Kafka's listener-scoped JAAS property, written as
// Kafka's documentation writes it.
func startSASLBroker(t *testing.T, log *testcluster.Buffer, extra ...brokerOption) (*testBroker, *testcert.CA, string) {
	t.Helper()
	ca := testcert.NewCA(t, t.TempDir(), "ca")
	server := ca.Issue("server", pkix.Name{CommonName: "broker-1"})
	tb := startBroker(t, append([]brokerOption{
		func(tb *testBroker) { tb.logOut = log },
		withProp("listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,SASL_SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0", freePort(t))),
		withProp("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT"),
		withProp("inter.broker.listener.name", "PLAINTEXT"),
		withProp("sasl.enabled.mechanisms", "PLAIN"),
		withProp("listener.name.sasl_ssl.plain.sasl.jaas.config",
			`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-pw" user_admin="admin-pw" user_alice="`+alicePassword+`";`),
		withProp("ssl.keystore.type", "PEM"),
		withProp("ssl.keystore.location", server.File),
		withProp("connection.failed.authentication.delay.ms", "300"),
		withProp("admin.listeners", "http://127.0.0.1:0"),
	}, extra...)...)
	return tb, ca, tb.b.Addr("SASL_SSL")
}

// TestSASLPlainClients: franz-go, sarama and kcat produce and consume over
// SASL_SSL with PLAIN.
func TestSASLPlainClients(t *testing.T) {
	log := &testcluster.Buffer{}
	tb, ca, addr := startSASLBroker(t, log)
	ctx := testContext(t, 60*time.Second)
	const topic = "sasl-plain"
	tb.createTopic(topic, 1, nil)
	tlsCfg := (&tlsBroker{ca: ca}).clientTLS(nil)

	cl := tb.client(kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(plain.Auth{User: "alice", Pass: alicePassword}.AsMechanism()), kgo.DefaultProduceTopic(topic))
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "franz-%d", i)}).FirstErr(); err != nil {
			t.Fatalf("franz-go produce over SASL_SSL: %v", err)
		}
	}

	scfg := saramaConfig()
	scfg.Net.TLS.Enable = true
	scfg.Net.TLS.Config = tlsCfg
	scfg.Net.SASL.Enable = true
	scfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	scfg.Net.SASL.User, scfg.Net.SASL.Password = "alice", alicePassword
	scfg.Producer.Return.Successes = true
	scfg.Producer.RequiredAcks = sarama.WaitForAll
	// v1 carries the exchange in SaslAuthenticate; v0 in bare frames.
	for _, v := range []int16{sarama.SASLHandshakeV1, sarama.SASLHandshakeV0} {
		scfg.Net.SASL.Version = v
		scfg.ApiVersionsRequest = v == sarama.SASLHandshakeV1 // sarama's rule for v0
		p, err := sarama.NewSyncProducer([]string{addr}, scfg)
		if err != nil {
			t.Fatalf("sarama over SASL_SSL, handshake v%d: %v", v, err)
		}
		for i := range 5 {
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprintf("sarama-%d", 5*v+int16(i)))}); err != nil {
				t.Fatalf("sarama produce over SASL_SSL, handshake v%d: %v", v, err)
			}
		}
		p.Close()
	}

	kcat := requireCommand(t, "kcat")
	args := []string{"-b", addr, "-X", "security.protocol=sasl_ssl", "-X", "ssl.ca.location=" + ca.CertFile,
		"-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice", "-X", "sasl.password=" + alicePassword}
	prod := exec.CommandContext(ctx, kcat, append(args, "-P", "-t", topic, "-X", "acks=all")...)
	prod.Stdin = strings.NewReader("kcat-0\nkcat-1\n")
	if out, err := prod.CombinedOutput(); err != nil || strings.Contains(string(out), "ERROR") {
		t.Fatalf("kcat produce over SASL_SSL: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, kcat, append(args, "-C", "-t", topic, "-o", "beginning", "-c", "22", "-e", "-q")...).CombinedOutput()
	if err != nil {
		t.Fatalf("kcat consume over SASL_SSL: %v\n%s", err, out)
	}
	for _, want := range []string{"franz-0", "sarama-9", "kcat-1"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kcat consumed no %s:\n%s", want, out)
		}
	}
	if strings.Contains(log.String(), alicePassword) {
		t.Error("the broker log holds the password")
	}
	if !strings.Contains(log.String(), "principal=User:alice") {
		t.Error("no connection authenticated as User:alice")
	}
}

// TestSASLRefusals: no credentials, a wrong password and an unknown
// mechanism each end that connection with Kafka's error, none hangs, the
// wrong password is answered only after the failed-authentication delay,
// and no secret reaches the log.
func TestSASLRefusals(t *testing.T) {
	log := &testcluster.Buffer{}
	tb, ca, addr := startSASLBroker(t, log)
	ctx := testContext(t, 30*time.Second)
	tlsCfg := (&tlsBroker{ca: ca}).clientTLS(nil)
	attempt := func(opts ...kgo.Opt) error {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsCfg), kgo.RequestRetries(0)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("hung instead of being refused")
		}
		return err
	}

	if err := attempt(); err == nil {
		t.Error("a client without credentials was served")
	}
	start := time.Now()
	err := attempt(kgo.SASL(plain.Auth{User: "alice", Pass: wrongPassword}.AsMechanism()))
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("wrong password answered after %v, before connection.failed.authentication.delay.ms", took)
	}
	err = attempt(kgo.SASL(scram.Auth{User: "alice", Pass: alicePassword}.AsSha512Mechanism()))
	if !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Errorf("unknown mechanism: %v, want UNSUPPORTED_SASL_MECHANISM", err)
	}
	if err := attempt(kgo.SASL(plain.Auth{User: "alice", Pass: alicePassword}.AsMechanism())); err != nil {
		t.Errorf("the right password after failures: %v", err)
	}

	logs := log.String()
	for _, secret := range []string{alicePassword, wrongPassword, "admin-pw"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the broker log holds %q", secret)
		}
	}
	for _, want := range []string{"request before SASL authentication", "SASL authentication failed", "SASL mechanism not enabled"} {
		if !strings.Contains(logs, want) {
			t.Errorf("no log line %q", want)
		}
	}
	m := (&tlsBroker{testBroker: tb}).metrics(t)
	for _, want := range []string{
		`skein_sasl_authentications_total{listener="SASL_SSL",mechanism="PLAIN",result="failure"} 1`,
		`skein_sasl_authentications_total{listener="SASL_SSL",mechanism="PLAIN",result="success"} 1`,
		`skein_sasl_authentications_total{listener="SASL_SSL",mechanism="none",result="unauthenticated_request"}`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestSASLPrincipalIsAuthorized: the principal a SASL connection
// authenticated as is what the authorizer checks: the super user may
// create a topic, alice may not write to it until an ACL allows her.
func TestSASLPrincipalIsAuthorized(t *testing.T) {
	tb, ca, addr := startSASLBroker(t, &testcluster.Buffer{},
		withProp("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
		withProp("super.users", "User:admin"),
		withProp("allow.everyone.if.no.acl.found", "false"))
	ctx := testContext(t, 30*time.Second)
	tlsCfg := (&tlsBroker{ca: ca}).clientTLS(nil)
	as := func(user, pass string, opts ...kgo.Opt) *kgo.Client {
		return tb.client(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsCfg),
			kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())}, opts...)...)
	}
	adm := kadm.NewClient(as("admin", "admin-pw"))
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "guarded"); err != nil || r.Err != nil {
		t.Fatalf("the super user's CreateTopics: %v %v", err, r.Err)
	}
	alice := as("alice", alicePassword, kgo.DefaultProduceTopic("guarded"), kgo.RecordRetries(0))
	err := alice.ProduceSync(ctx, &kgo.Record{Value: []byte("denied")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	grantWrite(ctx, t, tb, adm, "User:alice", "guarded")
	if err := alice.ProduceSync(ctx, &kgo.Record{Value: []byte("allowed")}).FirstErr(); err != nil {
		t.Fatalf("alice with a WRITE ACL: %v", err)
	}
}

// grantWrite creates an ACL allowing principal to WRITE to topic, and
// waits until the broker applied it (the only ACL of the test's cluster).
func grantWrite(ctx context.Context, t *testing.T, tb *testBroker, adm *kadm.Client, principal, topic string) {
	t.Helper()
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow(principal).Topics(topic).Operations(kadm.OpWrite))
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("create ACL: %v %+v", err, res)
	}
	awaitImage(ctx, t, tb.b, "the ACL", func(im *metadata.Image) bool { return im.ACLs().Len() == 1 })
}
