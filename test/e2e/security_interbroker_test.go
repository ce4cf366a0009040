package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/quorum"
	"github.com/skein-log/skein/internal/rpc"
	"github.com/skein-log/skein/internal/testcert"
	"github.com/skein-log/skein/internal/testcluster"
	"github.com/skein-log/skein/internal/testport"
)

// The properties every node of a secured test cluster shares: clients on
// PLAINTEXT, the authorizer on (with no ACL, everything is allowed until
// the cluster resource gets one), three replicas.
func securedClusterProps(t *testing.T, extra map[string]string) []map[string]string {
	props := map[string]string{
		"inter.broker.listener.name":       "INTERNAL",
		"authorizer.class.name":            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found":   "true",
		"default.replication.factor":       "3",
		"min.insync.replicas":              "2",
		"offsets.topic.replication.factor": "3",
	}
	maps.Copy(props, extra)
	return testcluster.Props(t, testcluster.Combine(3), props)
}

// TestInterBrokerMutualTLS: three combined nodes whose inter-broker
// listener (INTERNAL) and controller listener are SSL with client
// certificates required elect a controller, replicate acks=all writes,
// forward an admin request and fail a partition over, all over mutual
// TLS; clients use the PLAINTEXT listener. On the replication port a
// client without a certificate is refused, and one whose certificate is
// trusted but not a broker's (not in super.users) cannot fetch as a
// follower, call the controller APIs nor send Raft frames.
func TestInterBrokerMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, dir, "ca")
	alice := ca.Issue("alice", pkix.Name{CommonName: "alice"})
	props := securedClusterProps(t, map[string]string{
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SSL,CONTROLLER:SSL",
		"ssl.truststore.location":        ca.CertFile,
		"ssl.client.auth":                "required",
		"super.users":                    "User:CN=broker-1;User:CN=broker-2;User:CN=broker-3",
	})
	for i, p := range props {
		p["ssl.keystore.location"] = ca.Issue(fmt.Sprintf("broker-%d", i+1), pkix.Name{CommonName: fmt.Sprintf("broker-%d", i+1)}).File
	}
	c, internal, next, cl := startSecuredCluster(t, props)

	ctx := testContext(t, 30*time.Second)
	noCert := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
	if conn, err := rpc.DialSecure(ctx, nil, internal[next-1], "intruder", rpc.TLSUpgrade(noCert)); err == nil {
		// TLS 1.3: the server's refusal arrives after the client's
		// handshake finished, as the answer to the first request.
		_, err = conn.Request(ctx, kmsg.NewPtrApiVersionsRequest())
		conn.Close()
		if err == nil {
			t.Fatal("a client without a certificate was served on the replication port")
		}
	}
	aliceTLS := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{alice.TLS}}
	assertNotBroker(t, c, cl, next, internal[next-1], rpc.TLSUpgrade(aliceTLS))
}

// TestInterBrokerSASLSSL: the same cluster with SASL_SSL inter-broker and
// controller listeners: the nodes log in with SASL PLAIN
// (sasl.mechanism.inter.broker.protocol) as the JAAS entry's username, a
// super user; a wrong password is refused, and alice, a valid user who is
// not a super user, is not a broker.
func TestInterBrokerSASLSSL(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, dir, "ca")
	server := ca.Issue("server", pkix.Name{CommonName: "broker"})
	props := securedClusterProps(t, map[string]string{
		"listener.security.protocol.map":       "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL,CONTROLLER:SASL_SSL",
		"ssl.keystore.location":                server.File,
		"ssl.truststore.location":              ca.CertFile,
		"sasl.mechanism.inter.broker.protocol": "PLAIN",
		"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="broker" password="broker-secret" user_broker="broker-secret" user_alice="alice-secret";`,
		"super.users": "User:broker",
	})
	c, internal, next, cl := startSecuredCluster(t, props)

	ctx := testContext(t, 30*time.Second)
	trust := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
	login := func(user, password string) rpc.Upgrade {
		return func(ctx context.Context, nc net.Conn) (net.Conn, error) {
			nc, err := rpc.TLSUpgrade(trust)(ctx, nc)
			if err != nil {
				return nil, err
			}
			return nc, rpc.PlainLogin(ctx, nc, user, user, password)
		}
	}
	if conn, err := rpc.DialSecure(ctx, nil, internal[next-1], "intruder", login("broker", "guess")); err == nil {
		conn.Close()
		t.Fatal("a wrong broker password was accepted on the replication port")
	} else if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	assertNotBroker(t, c, cl, next, internal[next-1], login("alice", "alice-secret"))
}

// startSecuredCluster starts three combined nodes from props, each given
// an INTERNAL listener (the inter-broker one), and checks that they elect
// a controller, forward an admin request, replicate acks=all writes and
// fail a partition over, all through the secured cluster listeners. It
// returns the INTERNAL addresses, the partition's new leader and a client.
func startSecuredCluster(t *testing.T, props []map[string]string) (*testCluster, []string, int32, *kgo.Client) {
	t.Helper()
	c, internal := startInternalCluster(t, props)
	ctx := testContext(t, 60*time.Second)

	// An admin request sent to a node that is not the active controller
	// is forwarded to it over the TLS controller listener.
	ctrl := c.brokers[0].ControllerID()
	via := int32(1)
	if ctrl == via {
		via = 2
	}
	const topic = "secured-replication"
	admCl := c.client(kgo.SeedBrokers(c.addrs()[via-1]))
	create := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 3
	create.Topics = append(create.Topics, rt)
	create.TimeoutMillis = 30000
	resp, err := admCl.Broker(int(via)).Request(ctx, create)
	if err != nil {
		t.Fatalf("CreateTopics through broker %d (controller %d): %v", via, ctrl, err)
	}
	if ec := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; ec != 0 {
		t.Fatalf("CreateTopics forwarded by broker %d: %v", via, kerr.ErrorForCode(ec))
	}

	// acks=all: every write is on the followers, fetched secured.
	cl := c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	leader := c.leaderOf(ctx, topic, 0)
	c.kill(int(leader - 1))
	next := leader
	for next == leader {
		next = c.leaderOf(ctx, topic, 0)
	}
	var alive []string
	for i, b := range c.brokers {
		if b != nil {
			alive = append(alive, c.addrs()[i])
		}
	}
	cons := c.client(kgo.SeedBrokers(alive...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 20 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of 20 from new leader %d: %v", len(got), next, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range got {
		if v != fmt.Sprintf("v%d", i) {
			t.Fatalf("record %d is %q after the failover to broker %d", i, v, next)
		}
	}

	return c, internal, next, cl
}

// startInternalCluster starts three combined nodes from props, each given
// an INTERNAL listener (the inter-broker one), and waits until a
// controller is elected and the brokers registered, over the secured
// controller listeners. It returns the INTERNAL addresses.
func startInternalCluster(t *testing.T, props []map[string]string) (*testCluster, []string) {
	t.Helper()
	internal := make([]string, len(props))
	for i, p := range props {
		internal[i] = fmt.Sprintf("127.0.0.1:%d", testport.One(t))
		p["listeners"] += ",INTERNAL://" + internal[i]
	}
	c := &testCluster{t: t, brokers: make([]*node.Broker, len(props)), props: props}
	t.Cleanup(func() {
		for i := range c.brokers {
			c.kill(i)
		}
	})
	for i := range props {
		c.start(i)
	}
	c.waitRegistered()
	t.Cleanup(c.dumpGoroutinesIfFailed)
	return c, internal
}

// assertNotBroker: a trusted client that is not a broker (upgrade secures
// its connections: a certificate, or a SASL login) on the cluster
// listeners of node next cannot fetch as a follower, call a controller
// API, nor speak Raft.
func assertNotBroker(t *testing.T, c *testCluster, cl *kgo.Client, next int32, port string, upgrade rpc.Upgrade) {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	dctx := ctx
	const topic = "secured-replication"
	conn, err := rpc.DialSecure(dctx, nil, port, "alice", upgrade)
	if err != nil {
		t.Fatalf("alice refused on the replication port: %v", err)
	}
	defer conn.Close()
	// Make the cluster resource carry an ACL, so that
	// allow.everyone.if.no.acl.found no longer covers CLUSTER_ACTION.
	acl := kadm.NewACLs().Allow("User:CN=ops").Clusters().Operations(kadm.OpAlter).ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := kadm.NewClient(cl).CreateACLs(ctx, acl); err != nil || res[0].Err != nil {
		t.Fatalf("create cluster ACL: %v %v", err, res)
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.ReplicaID = int32(next%3 + 1)
	fetch.MaxWaitMillis = 0
	fetch.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	fp.CurrentLeaderEpoch = -1
	fp.LastFetchedEpoch = -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	var ec int16
	for deadline := time.Now().Add(10 * time.Second); ; {
		fr, err := conn.Request(dctx, fetch)
		if err != nil {
			t.Fatalf("alice's follower fetch: %v", err)
		}
		f := fr.(*kmsg.FetchResponse)
		ec = f.ErrorCode
		if ec == 0 && len(f.Topics) == 1 && len(f.Topics[0].Partitions) == 1 {
			ec = f.Topics[0].Partitions[0].ErrorCode
		}
		// The ACL reaches this node within a metadata round.
		if ec != 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond): // polling an external view
		}
	}
	if ec != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice's follower fetch: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(ec))
	}
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.SetVersion(0)
	hb.BrokerID, hb.BrokerEpoch = next, 1
	if c.brokers[next-1] == nil {
		t.Fatal("no live node")
	}
	ctrlAddr := strings.TrimPrefix(strings.Split(c.props[next-1]["listeners"], ",")[1], "CONTROLLER://")
	cconn, err := rpc.DialSecure(dctx, nil, ctrlAddr, "alice", upgrade)
	if err != nil {
		t.Fatalf("alice on the controller listener: %v", err)
	}
	defer cconn.Close()
	// Nor may it speak Raft there: the frame closes the connection
	// (Raft frames are never answered, so an accepted one would leave it
	// open until the read deadline).
	plain, err := net.Dial("tcp", ctrlAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	raw, err := upgrade(dctx, plain)
	if err != nil {
		t.Fatalf("alice on the controller listener: %v", err)
	}
	frame, err := quorum.AppendRaftFrame(nil, testcluster.ClusterID, &raftpb.Message{Type: raftpb.MsgHeartbeat.Enum(),
		From: new(quorum.RaftID(next%3 + 1)), To: new(quorum.RaftID(next)), Term: new(uint64(1))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Write(frame); err != nil {
		t.Fatal(err)
	}
	raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := raw.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("alice's raft frame: read %v, want the connection closed", err)
	}
	hr, err := cconn.Request(dctx, hb)
	if err != nil {
		t.Fatalf("alice's BrokerHeartbeat: %v", err)
	}
	if ec := hr.(*kmsg.BrokerHeartbeatResponse).ErrorCode; ec != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice's BrokerHeartbeat: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(ec))
	}
}
