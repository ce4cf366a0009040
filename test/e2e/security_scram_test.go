package e2e

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/node"
)

const bobPassword = "bob-Scr4m-pw"

// startScramCluster starts three brokers, each with a SASL_PLAINTEXT
// listener offering only SCRAM-SHA-512 beside the PLAINTEXT one the
// cluster's own traffic and the admin client use. The SASL ports are fixed
// up front so a restarted cluster keeps its addresses.
func startScramCluster(t *testing.T) (*testCluster, []string) {
	t.Helper()
	c := newRolesCluster(t, []string{combinedRoles, combinedRoles, combinedRoles}, map[string]string{
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":     "PLAINTEXT",
		"sasl.enabled.mechanisms":        "SCRAM-SHA-512",
		// Short, so the wrong password's answer does not slow the test.
		"connection.failed.authentication.delay.ms": "50",
	}, node.Options{})
	var sasl []string
	for i := range c.props {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		c.props[i]["listeners"] += ",SASL_PLAINTEXT://" + addr
		sasl = append(sasl, addr)
	}
	for i := range c.props {
		c.start(i)
	}
	c.waitRegistered()
	return c, sasl
}

// TestSCRAMUsersAcrossTheCluster: a user created through a broker that is
// not the controller logs in with franz-go and sarama on every broker, a
// wrong password is refused with SASL_AUTHENTICATION_FAILED, the
// credential survives a full restart, and deleting it refuses the next
// login.
func TestSCRAMUsersAcrossTheCluster(t *testing.T) {
	c, saslAddrs := startScramCluster(t)
	ctx := testContext(t, 60*time.Second)
	const topic = "scram-users"

	// An admin client seeded with a broker that is not the controller:
	// AlterUserScramCredentials is forwarded from there.
	ctrl := c.brokers[0].ControllerID()
	other := 0
	for i := range c.brokers {
		if int32(i+1) != ctrl {
			other = i
			break
		}
	}
	adminCl := c.client(kgo.SeedBrokers(c.addrs()[other]))
	adm := kadm.NewClient(adminCl)
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	alter := func(del []kadm.DeleteSCRAM, up []kadm.UpsertSCRAM) {
		t.Helper()
		res, err := adm.AlterUserSCRAMs(ctx, del, up)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Error(); err != nil {
			t.Fatalf("AlterUserScramCredentials: %v", err)
		}
	}
	alter(nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: bobPassword}})
	awaitCredential := func(present bool) {
		t.Helper()
		for _, b := range c.brokers {
			awaitImage(ctx, t, b, fmt.Sprintf("bob's credential present=%v", present), func(im *metadata.Image) bool {
				_, ok := im.ScramCredential("SCRAM-SHA-512", "bob")
				return ok == present
			})
		}
	}
	awaitCredential(true)

	described, err := adm.DescribeUserSCRAMs(ctx, "bob", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	if d := described["bob"]; d.Err != nil || len(d.CredInfos) != 1 || d.CredInfos[0].Mechanism != kadm.ScramSha512 || d.CredInfos[0].Iterations != 8192 {
		t.Fatalf("describe bob: %+v", d)
	}
	if d := described["nobody"]; !errors.Is(d.Err, kerr.ResourceNotFound) {
		t.Fatalf("describe an unknown user: %+v, want RESOURCE_NOT_FOUND", d)
	}
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "weak", Mechanism: kadm.ScramSha512, Iterations: 4096,
		Salt: []byte("s"), SaltedPassword: []byte("p")}, {User: "weak", Mechanism: kadm.ScramSha512, Iterations: 4096, Salt: []byte("s"), SaltedPassword: []byte("p")}})
	if err != nil || !errors.Is(res["weak"].Err, kerr.DuplicateResource) {
		t.Fatalf("the same credential twice: %v %+v, want DUPLICATE_RESOURCE", err, res)
	}

	login := func(pass string) *kgo.Client {
		return c.client(kgo.SeedBrokers(saslAddrs...), kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.SASL(scram.Auth{User: "bob", Pass: pass}.AsSha512Mechanism()))
	}
	produceAll := func(cl *kgo.Client, prefix string, n int) {
		t.Helper()
		for i := range n {
			// Three partitions led by the three brokers: every broker
			// authenticates bob.
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 3), Value: fmt.Appendf(nil, "%s-%d", prefix, i)}).FirstErr(); err != nil {
				t.Fatalf("produce as bob (%s): %v", prefix, err)
			}
		}
	}
	produceAll(login(bobPassword), "franz", 6)

	scfg := saramaConfig()
	scfg.Net.SASL.Enable = true
	scfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
	scfg.Net.SASL.User, scfg.Net.SASL.Password = "bob", bobPassword
	scfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramSHA512Client{} }
	scfg.Producer.Return.Successes = true
	scfg.Producer.Partitioner = sarama.NewManualPartitioner
	scfg.Producer.RequiredAcks = sarama.WaitForAll
	p, err := sarama.NewSyncProducer(saslAddrs, scfg)
	if err != nil {
		t.Fatalf("sarama SCRAM-SHA-512 login: %v", err)
	}
	for i := range 6 {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: int32(i % 3), Value: sarama.StringEncoder(fmt.Sprintf("sarama-%d", i))}); err != nil {
			t.Fatalf("sarama produce as bob: %v", err)
		}
	}
	p.Close()
	consumer, err := sarama.NewConsumer(saslAddrs, scfg)
	if err != nil {
		t.Fatalf("sarama consumer login: %v", err)
	}
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for len(seen) < 4 {
		select {
		case m := <-pc.Messages():
			seen[string(m.Value)] = true
		case <-ctx.Done():
			t.Fatalf("sarama consumed only %v from partition 0", seen)
		}
	}
	pc.Close()
	consumer.Close()
	if !seen["franz-0"] || !seen["sarama-3"] {
		t.Fatalf("sarama consumed %v", seen)
	}

	// kcat (librdkafka's own SCRAM client) reads back what both wrote.
	kcat := requireCommand(t, "kcat")
	out, err := exec.CommandContext(ctx, kcat, "-b", strings.Join(saslAddrs, ","), "-X", "security.protocol=sasl_plaintext",
		"-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=bob", "-X", "sasl.password="+bobPassword,
		"-C", "-t", topic, "-o", "beginning", "-c", "12", "-e", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat consume as bob: %v\n%s", err, out)
	}
	for _, want := range []string{"franz-5", "sarama-5"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("kcat consumed no %s:\n%s", want, out)
		}
	}

	refused := func(pass string) error {
		cl := c.client(kgo.SeedBrokers(saslAddrs...), kgo.RequestRetries(0),
			kgo.SASL(scram.Auth{User: "bob", Pass: pass}.AsSha512Mechanism()))
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	if err := refused(wrongPassword); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}

	// A full restart: the credential is in the metadata log and snapshot.
	for i := range c.brokers {
		c.stop(i)
	}
	for i := range c.props {
		c.start(i)
	}
	c.waitRegistered()
	awaitCredential(true)
	produceAll(login(bobPassword), "after-restart", 3)

	adminCl = c.client()
	adm = kadm.NewClient(adminCl)
	alter([]kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha512}}, nil)
	awaitCredential(false)
	if err := refused(bobPassword); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("deleted user: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// scramSHA512Client is an RFC 5802 client for sarama, which leaves the
// SCRAM computation to the application.
type scramSHA512Client struct {
	user, pass  string
	step        int
	clientFirst string
	serverSig   []byte
	done        bool
}

func (s *scramSHA512Client) Begin(user, pass, _ string) error {
	s.user, s.pass = user, pass
	return nil
}

func (s *scramSHA512Client) Done() bool { return s.done }

func (s *scramSHA512Client) Step(challenge string) (string, error) {
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(sha512.New, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	s.step++
	switch s.step {
	case 1:
		s.clientFirst = "n=" + strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s.user) + ",r=" + rand.Text()
		return "n,," + s.clientFirst, nil
	case 2:
		attrs := map[string]string{}
		for f := range strings.SplitSeq(challenge, ",") {
			if k, v, ok := strings.Cut(f, "="); ok {
				attrs[k] = v
			}
		}
		salt, err := base64.StdEncoding.DecodeString(attrs["s"])
		if err != nil {
			return "", fmt.Errorf("server-first salt: %w", err)
		}
		iters, err := strconv.Atoi(attrs["i"])
		if err != nil {
			return "", fmt.Errorf("server-first iterations: %w", err)
		}
		salted, err := pbkdf2.Key(sha512.New, s.pass, salt, iters, sha512.Size)
		if err != nil {
			return "", fmt.Errorf("pbkdf2: %w", err)
		}
		clientKey := mac(salted, "Client Key")
		stored := sha512.Sum512(clientKey)
		final := "c=biws,r=" + attrs["r"]
		auth := s.clientFirst + "," + challenge + "," + final
		sig := mac(stored[:], auth)
		for i := range clientKey {
			clientKey[i] ^= sig[i]
		}
		s.serverSig = mac(mac(salted, "Server Key"), auth)
		return final + ",p=" + base64.StdEncoding.EncodeToString(clientKey), nil
	default:
		v, ok := strings.CutPrefix(challenge, "v=")
		got, err := base64.StdEncoding.DecodeString(v)
		if !ok || err != nil || !hmac.Equal(got, s.serverSig) {
			return "", errors.New("the server's signature does not verify")
		}
		s.done = true
		return "", nil
	}
}
