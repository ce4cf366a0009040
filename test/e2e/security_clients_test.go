package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafka "github.com/segmentio/kafka-go"
	kscram "github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/testcert"
	"github.com/skein-log/skein/internal/testport"
)

// The client matrix of issue #13: every client produces, consumes in a
// group and runs an admin call over SASL_SSL with SCRAM-SHA-512 and over
// mutual TLS, on a three-node cluster whose inter-broker and controller
// listeners are mutual TLS as well, with the StandardAuthorizer refusing
// everything the ACLs do not grant.
const (
	secureUser     = "alice" // the SCRAM-SHA-512 user
	securePassword = "alice-Scr4m-pw"
	secureCertCN   = "bob" // the client certificate's subject: User:CN=bob
	secureRecords  = 30    // produced and consumed per client and protocol
	securePrefix   = "sec-"
)

// secureCluster is the matrix's cluster: SASL_SSL (SCRAM-SHA-512, no
// client certificate) and SSL (client certificate required) client
// listeners, INTERNAL and CONTROLLER listeners with mutual TLS.
type secureCluster struct {
	c     *testCluster
	ca    *testcert.CA
	admin *kadm.Client // User:CN=admin, a super user, over mutual TLS
	modes []secureMode
}

// secureMode is one way in for a client: where, and with which
// credentials; each client library turns it into its own settings.
type secureMode struct {
	name      string // "sasl_ssl" or "mtls"
	principal string
	addrs     []string
	tls       *tls.Config   // trusts the CA; with a certificate for mtls
	cert      testcert.Leaf // mtls: key and chain in one PEM file
	sasl      bool          // SCRAM-SHA-512 as secureUser
	caFile    string
}

// librdkafka are librdkafka's security properties for the mode
// (bootstrap.servers aside).
func (m secureMode) librdkafka() map[string]string {
	props := map[string]string{"ssl.ca.location": m.caFile}
	if m.sasl {
		props["security.protocol"] = "SASL_SSL"
		props["sasl.mechanisms"] = "SCRAM-SHA-512"
		props["sasl.username"], props["sasl.password"] = secureUser, securePassword
	} else {
		props["security.protocol"] = "SSL"
		props["ssl.certificate.location"], props["ssl.key.location"] = m.cert.File, m.cert.File
	}
	return props
}

func startSecureCluster(t *testing.T) *secureCluster {
	t.Helper()
	dir := t.TempDir()
	ca := testcert.NewCA(t, dir, "ca")
	node := ca.Issue("node", pkix.Name{CommonName: "node"})
	props := securedClusterProps(t, map[string]string{
		"listener.security.protocol.map":         "SASL_SSL:SASL_SSL,SSL:SSL,INTERNAL:SSL,CONTROLLER:SSL",
		"ssl.keystore.type":                      "PEM",
		"ssl.keystore.location":                  node.File,
		"ssl.truststore.type":                    "PEM",
		"ssl.truststore.location":                ca.CertFile,
		"ssl.client.auth":                        "required",
		"listener.name.sasl_ssl.ssl.client.auth": "none",
		"sasl.enabled.mechanisms":                "SCRAM-SHA-512",
		"allow.everyone.if.no.acl.found":         "false",
		"super.users":                            "User:CN=node;User:CN=admin",
		"group.initial.rebalance.delay.ms":       "0",
		"group.min.session.timeout.ms":           "1000",
	})
	sc := &secureCluster{ca: ca}
	var saslAddrs, sslAddrs []string
	for _, p := range props {
		// testcluster.Props' client listener becomes the SASL_SSL one;
		// no listener of this cluster is plaintext.
		p["listeners"] = strings.Replace(p["listeners"], "PLAINTEXT://", "SASL_SSL://", 1)
		saslAddrs = append(saslAddrs, strings.TrimPrefix(strings.Split(p["listeners"], ",")[0], "SASL_SSL://"))
		ssl := fmt.Sprintf("127.0.0.1:%d", testport.One(t))
		p["listeners"] += ",SSL://" + ssl
		sslAddrs = append(sslAddrs, ssl)
	}
	sc.c, _ = startInternalCluster(t, props)

	adminLeaf := ca.Issue("admin", pkix.Name{CommonName: "admin"})
	adminCl, err := kgo.NewClient(kgo.SeedBrokers(sslAddrs...), kgo.DialTLSConfig(clientTLSFor(ca, &adminLeaf)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adminCl.Close)
	sc.admin = kadm.NewClient(adminCl)

	bob := ca.Issue("bob", pkix.Name{CommonName: secureCertCN})
	sc.modes = []secureMode{
		{name: "sasl_ssl", principal: "User:" + secureUser, addrs: saslAddrs, tls: clientTLSFor(ca, nil), sasl: true, caFile: ca.CertFile},
		{name: "mtls", principal: "User:CN=" + secureCertCN, addrs: sslAddrs, tls: clientTLSFor(ca, &bob), cert: bob, caFile: ca.CertFile},
	}

	ctx := testContext(t, 60*time.Second)
	res, err := sc.admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: secureUser, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: securePassword}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("create the SCRAM user over mutual TLS: %v", err)
	}
	// Each principal may use the sec- topics and groups and describe the
	// cluster (ListGroups); nothing else.
	acls := 0
	for _, m := range sc.modes {
		for _, b := range []*kadm.ACLBuilder{
			kadm.NewACLs().Allow(m.principal).AllowHosts("*").Topics(securePrefix).ResourcePatternType(kadm.ACLPatternPrefixed).
				Operations(kadm.OpCreate, kadm.OpWrite, kadm.OpRead, kadm.OpDescribe, kadm.OpDescribeConfigs),
			kadm.NewACLs().Allow(m.principal).AllowHosts("*").Groups(securePrefix).ResourcePatternType(kadm.ACLPatternPrefixed).
				Operations(kadm.OpRead, kadm.OpDescribe),
			kadm.NewACLs().Allow(m.principal).AllowHosts("*").Clusters().ResourcePatternType(kadm.ACLPatternLiteral).
				Operations(kadm.OpDescribe, kadm.OpIdempotentWrite),
		} {
			mustCreateACLs(ctx, t, sc.admin, b)
		}
		acls += 5 + 2 + 2
	}
	awaitACLs(ctx, t, sc.c, acls)
	for _, b := range sc.c.brokers {
		awaitImage(ctx, t, b, "alice's SCRAM credential", func(im *metadata.Image) bool {
			_, ok := im.ScramCredential("SCRAM-SHA-512", secureUser)
			return ok
		})
	}
	return sc
}

// clientTLSFor trusts ca and presents leaf, if any.
func clientTLSFor(ca *testcert.CA, leaf *testcert.Leaf) *tls.Config {
	cfg := &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
	if leaf != nil {
		cfg.Certificates = []tls.Certificate{leaf.TLS}
	}
	return cfg
}

// secureClient runs one client library's produce, group consume and
// admin calls in a mode on topic and group (both named after the client
// and the mode).
type secureClient struct {
	name string
	run  func(t *testing.T, sc *secureCluster, m secureMode, topic, group string)
}

var secureClients = []secureClient{
	{"franz-go", secureFranz},
	{"sarama", secureSarama},
	{"kafka-go", secureKafkaGo},
	{"kcat", secureKcat},
	{"confluent-kafka-go", secureConfluent}, // security_clients_cgo_test.go
}

// TestSecureClients: franz-go, sarama, kafka-go, kcat and
// confluent-kafka-go each create or describe a topic, produce to it,
// consume it in a group that commits, and list groups, over SASL_SSL
// with SCRAM-SHA-512 and over mutual TLS, on a cluster with no
// plaintext listener. The group's committed offsets, read by the admin,
// cover every record; a principal's ACLs bound it (franz-go is refused a
// topic outside them).
func TestSecureClients(t *testing.T) {
	sc := startSecureCluster(t)
	for _, m := range sc.modes {
		for _, cl := range secureClients {
			t.Run(cl.name+"/"+m.name, func(t *testing.T) {
				name := securePrefix + cl.name + "-" + m.name
				cl.run(t, sc, m, name, name)
			})
		}
	}
	if n := tlsFailures(t, sc.c); n != 0 {
		t.Errorf("%v TLS handshakes failed", n)
	}
}

// expectGroupCommitted: the admin reads the group's committed offsets for
// topic; they cover all n records (the offset after the last one of each
// partition, which the admin reads as the end offsets).
func (sc *secureCluster) expectGroupCommitted(ctx context.Context, t *testing.T, group, topic string, n int64) {
	t.Helper()
	ends, err := sc.admin.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != n {
		t.Fatalf("%s holds %d records, want %d", topic, total, n)
	}
	committed, err := sc.admin.FetchOffsets(ctx, group)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		t.Fatalf("committed offsets of %s: %v", group, err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if got, _ := committed.Lookup(topic, o.Partition); got.At != o.Offset {
			t.Errorf("group %s committed %d on %s[%d], want its end %d", group, got.At, topic, o.Partition, o.Offset)
		}
	})
}

// expectValues checks that got holds v0..v(n-1) of prefix exactly once.
func expectValues(t *testing.T, who string, got []string, n int) {
	t.Helper()
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for i := range n {
		if v := fmt.Sprintf("v%d", i); seen[v] != 1 {
			t.Errorf("%s read %s %d times, want once (read %d records)", who, v, seen[v], len(got))
		}
	}
	if len(got) != n {
		t.Errorf("%s read %d records, want %d", who, len(got), n)
	}
}

func secureFranz(t *testing.T, sc *secureCluster, m secureMode, topic, group string) {
	ctx := testContext(t, 60*time.Second)
	opts := []kgo.Opt{kgo.SeedBrokers(m.addrs...), kgo.DialTLSConfig(m.tls)}
	if m.sasl {
		opts = append(opts, kgo.SASL(scram.Auth{User: secureUser, Pass: securePassword}.AsSha512Mechanism()))
	}
	newClient := func(more ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append(append([]kgo.Opt{}, opts...), more...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	adm := kadm.NewClient(newClient())
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, topic); err != nil {
		t.Fatalf("kadm create topic: %v", err)
	}
	// The ACLs are the principal's: a topic outside them is refused.
	if r, err := adm.CreateTopic(ctx, 1, 3, nil, "outside-acls"); !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(r.Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("create a topic without an ACL as %s: %v %v, want TOPIC_AUTHORIZATION_FAILED", m.principal, err, r.Err)
	}
	prod := newClient(kgo.DefaultProduceTopic(topic))
	for i := range secureRecords {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	cons := newClient(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(500*time.Millisecond))
	var got []string
	for len(got) < secureRecords {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("group consume after %d records: %v", len(got), err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	expectValues(t, "franz-go", got, secureRecords)
	sc.expectGroupCommitted(ctx, t, group, topic, secureRecords)
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("kadm list groups: %v", err)
	}
	if _, ok := groups[group]; !ok {
		t.Errorf("ListGroups as %s: %v, want %s among them", m.principal, groups.Groups(), group)
	}
}

func secureSaramaConfig(m secureMode) *sarama.Config {
	cfg := saramaConfig()
	cfg.Net.TLS.Enable = true
	cfg.Net.TLS.Config = m.tls
	if m.sasl {
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		cfg.Net.SASL.User, cfg.Net.SASL.Password = secureUser, securePassword
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramSHA512Client{} }
	}
	return cfg
}

func secureSarama(t *testing.T, sc *secureCluster, m secureMode, topic, group string) {
	ctx := testContext(t, 60*time.Second)
	cfg := secureSaramaConfig(m)
	adm, err := sarama.NewClusterAdmin(m.addrs, cfg)
	if err != nil {
		t.Fatalf("sarama admin: %v", err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 3}, false); err != nil {
		t.Fatalf("sarama create topic: %v", err)
	}

	pcfg := secureSaramaConfig(m)
	pcfg.Producer.RequiredAcks = sarama.WaitForAll
	pcfg.Producer.Return.Successes = true
	p, err := sarama.NewSyncProducer(m.addrs, pcfg)
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	for i := range secureRecords {
		// A key per record spreads them over the partitions.
		msg := &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.StringEncoder(fmt.Sprintf("v%d", i))}
		if _, _, err := p.SendMessage(msg); err != nil {
			t.Fatalf("sarama produce %d: %v", i, err)
		}
	}
	p.Close()

	ccfg := secureSaramaConfig(m)
	ccfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	ccfg.Consumer.Offsets.AutoCommit.Enable = false
	ccfg.Consumer.MaxWaitTime = 500 * time.Millisecond
	cg, err := sarama.NewConsumerGroup(m.addrs, group, ccfg)
	if err != nil {
		t.Fatalf("sarama consumer group: %v", err)
	}
	defer cg.Close()
	h := &saramaCollector{want: secureRecords, done: make(chan struct{})}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	consumed := make(chan error, 1)
	go func() {
		for cctx.Err() == nil {
			if err := cg.Consume(cctx, []string{topic}, h); err != nil {
				consumed <- err
				return
			}
		}
		consumed <- nil
	}()
	select {
	case <-h.done:
	case err := <-consumed:
		t.Fatalf("sarama group consume: %v (read %d)", err, len(h.values))
	case <-ctx.Done():
		t.Fatalf("sarama group read %d of %d records", len(h.values), secureRecords)
	}
	cancel()
	if err := <-consumed; err != nil {
		t.Fatalf("sarama group consume: %v", err)
	}
	expectValues(t, "sarama", h.values, secureRecords)
	sc.expectGroupCommitted(ctx, t, group, topic, secureRecords)
	groups, err := adm.ListConsumerGroups()
	if err != nil {
		t.Fatalf("sarama list groups: %v", err)
	}
	if _, ok := groups[group]; !ok {
		t.Errorf("sarama ListConsumerGroups as %s: %v, want %s among them", m.principal, groups, group)
	}
}

// saramaCollector marks every record it reads and commits synchronously
// once it has read want of them, then closes done.
type saramaCollector struct {
	want   int
	mu     sync.Mutex
	values []string // read by the test only after done
	done   chan struct{}
}

func (*saramaCollector) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (*saramaCollector) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaCollector) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		sess.MarkMessage(msg, "")
		// One claim per partition runs concurrently; done is closed by
		// the one that reads the last record.
		if h.add(string(msg.Value)) {
			sess.Commit()
			close(h.done)
		}
	}
	return nil
}

// add records one value and says whether it was the last one wanted.
func (h *saramaCollector) add(v string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.values = append(h.values, v)
	return len(h.values) == h.want
}

func secureKafkaGo(t *testing.T, sc *secureCluster, m secureMode, topic, group string) {
	ctx := testContext(t, 60*time.Second)
	dialer := &kafka.Dialer{Timeout: 10 * time.Second, TLS: m.tls}
	transport := &kafka.Transport{TLS: m.tls}
	if m.sasl {
		mech, err := kscram.Mechanism(kscram.SHA512, secureUser, securePassword)
		if err != nil {
			t.Fatal(err)
		}
		dialer.SASLMechanism, transport.SASL = mech, mech
	}
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(m.addrs...), Transport: transport, Timeout: 30 * time.Second}
	created, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: 3, ReplicationFactor: 3}}})
	if err == nil {
		err = created.Errors[topic]
	}
	if err != nil {
		t.Fatalf("kafka-go create topic: %v", err)
	}
	w := &kafka.Writer{Addr: kafka.TCP(m.addrs...), Topic: topic, Transport: transport, Balancer: &kafka.RoundRobin{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: 10 * time.Millisecond}
	msgs := make([]kafka.Message, secureRecords)
	for i := range msgs {
		msgs[i].Value = fmt.Appendf(nil, "v%d", i)
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("kafka-go produce: %v", err)
	}
	w.Close()

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: m.addrs, GroupID: group, Topic: topic, Dialer: dialer,
		StartOffset: kafka.FirstOffset, MaxWait: 500 * time.Millisecond,
		HeartbeatInterval: clientGroupHeartbeat, SessionTimeout: clientGroupSession})
	defer r.Close()
	var got []string
	for len(got) < secureRecords {
		msg, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go group fetch after %d records: %v", len(got), err)
		}
		got = append(got, string(msg.Value))
		if err := r.CommitMessages(ctx, msg); err != nil {
			t.Fatalf("kafka-go commit: %v", err)
		}
	}
	expectValues(t, "kafka-go", got, secureRecords)
	sc.expectGroupCommitted(ctx, t, group, topic, secureRecords)
	groups, err := client.ListGroups(ctx, &kafka.ListGroupsRequest{})
	if err == nil {
		err = groups.Error
	}
	if err != nil {
		t.Fatalf("kafka-go list groups: %v", err)
	}
	var ids []string
	for _, g := range groups.Groups {
		ids = append(ids, g.GroupID)
	}
	if !strings.Contains(" "+strings.Join(ids, " ")+" ", " "+group+" ") {
		t.Errorf("kafka-go ListGroups as %s: %v, want %s among them", m.principal, ids, group)
	}
}

// secureKcat: kcat (librdkafka 2.0 from Debian) cannot create topics, so
// the admin creates one; kcat describes it (-L, Metadata), produces,
// and reads it as a group member that commits on exit.
func secureKcat(t *testing.T, sc *secureCluster, m secureMode, topic, group string) {
	kcat := requireCommand(t, "kcat")
	ctx := testContext(t, 60*time.Second)
	if _, err := sc.admin.CreateTopic(ctx, 3, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	var sec []string
	for k, v := range m.librdkafka() {
		sec = append(sec, "-X", k+"="+v)
	}
	groupArgs := append(append([]string{}, sec...), "-c", fmt.Sprint(secureRecords))
	sec = append(sec, "-b", strings.Join(m.addrs, ","))
	out, err := exec.CommandContext(ctx, kcat, append(sec, "-L", "-t", topic)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -L: %v\n%s", err, out)
	}
	for _, want := range []string{"3 brokers:", fmt.Sprintf(`topic "%s" with 3 partitions:`, topic)} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("kcat -L printed no %q:\n%s", want, out)
		}
	}
	var in strings.Builder
	for i := range secureRecords {
		fmt.Fprintf(&in, "v%d\n", i)
	}
	prod := exec.CommandContext(ctx, kcat, append(sec, "-P", "-t", topic, "-X", "acks=all")...)
	prod.Stdin = strings.NewReader(in.String())
	if out, err := prod.CombinedOutput(); err != nil || strings.Contains(string(out), "ERROR") {
		t.Fatalf("kcat produce: %v\n%s", err, out)
	}
	refs := kcatGroupRead(ctx, t, strings.Join(m.addrs, ","), group, topic, groupArgs...)
	seen := map[[2]int64]bool{}
	for _, r := range refs {
		seen[r] = true
	}
	if len(refs) != secureRecords || len(seen) != secureRecords {
		t.Fatalf("kcat -G read %d records (%d distinct), want %d", len(refs), len(seen), secureRecords)
	}
	sc.expectGroupCommitted(ctx, t, group, topic, secureRecords)
}
