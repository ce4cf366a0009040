package e2e

import (
	"crypto/x509/pkix"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/testcert"
)

// clusterCounter sums a counter over a cluster's running nodes, counting
// the series whose labels include every one of want.
func clusterCounter(t *testing.T, c *testCluster, name string, want map[string]string) float64 {
	t.Helper()
	var sum float64
	for _, b := range c.brokers {
		if b == nil {
			continue
		}
		mfs, err := b.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
		series:
			for _, m := range mf.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				for k, v := range want {
					if labels[k] != v {
						continue series
					}
				}
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// saslCounter sums skein_sasl_authentications_total{listener, result}.
func saslCounter(t *testing.T, c *testCluster, listener, result string) float64 {
	return clusterCounter(t, c, "skein_sasl_authentications_total", map[string]string{"listener": listener, "result": result})
}

// TestInterBrokerSCRAMWithReauthentication: replica fetchers log in to
// the INTERNAL (SASL_SSL) listener with SCRAM-SHA-512
// (sasl.mechanism.inter.broker.protocol) as the broker user of the
// listener's ScramLoginModule entry, once that user's credential exists
// (the controller listener, mutual TLS, needs none, so the cluster comes
// up first). With connections.max.reauth.ms on that listener the nodes'
// connections log in again in place before their session ends: acks=all
// writes go on through several lifetimes and no connection is closed as
// expired.
func TestInterBrokerSCRAMWithReauthentication(t *testing.T) {
	const lifetime = 2 * time.Second // renewed at 85%: 300 ms of margin for a request in flight then
	dir := t.TempDir()
	ca := testcert.NewCA(t, dir, "ca")
	props := securedClusterProps(t, map[string]string{
		"listener.security.protocol.map":           "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL,CONTROLLER:SSL",
		"ssl.truststore.location":                  ca.CertFile,
		"listener.name.controller.ssl.client.auth": "required",
		"sasl.enabled.mechanisms":                  "SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol":     "SCRAM-SHA-512",
		"listener.name.internal.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required ` +
			`username="broker" password="broker-Scr4m";`,
		"listener.name.internal.scram-sha-512.connections.max.reauth.ms": strconv.Itoa(int(lifetime.Milliseconds())),
		"super.users": "User:broker;User:CN=node",
	})
	node0 := ca.Issue("node", pkix.Name{CommonName: "node"})
	for _, p := range props {
		p["ssl.keystore.location"] = node0.File
	}
	c, _ := startInternalCluster(t, props) // over the mutual-TLS controller listener
	ctx := testContext(t, 90*time.Second)

	adm := kadm.NewClient(c.client())
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "broker", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "broker-Scr4m"}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("create the broker's SCRAM user: %v", err)
	}
	for _, b := range c.brokers {
		awaitImage(ctx, t, b, "the broker's credential", func(im *metadata.Image) bool {
			_, ok := im.ScramCredential("SCRAM-SHA-512", "broker")
			return ok
		})
	}
	const topic = "scram-replication"
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	cl := c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	produced := 0
	produce := func() {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", produced)}).FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d over SCRAM replication: %v", produced, err)
		}
		produced++
	}
	produce()
	if n := saslCounter(t, c, "INTERNAL", "success"); n == 0 {
		t.Fatal("no SCRAM login on INTERNAL")
	}
	// Each renewal needs a request after 85% of the lifetime; replica
	// fetchers long-poll, so the loop follows their pace.
	for saslCounter(t, c, "INTERNAL", "reauthentication_success") < 4 {
		produce()
	}
	if n := saslCounter(t, c, "INTERNAL", "expired"); n != 0 {
		t.Errorf("%v node connections closed as expired; they re-authenticate in place", n)
	}
	if n := saslCounter(t, c, "INTERNAL", "reauthentication_failure"); n != 0 {
		t.Errorf("%v re-authentications failed", n)
	}
	md, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if p := md[topic].Partitions[0]; len(p.ISR) != 3 {
		t.Errorf("ISR %v after %d writes, want all three replicas", p.ISR, produced)
	}
}

// TestBrokerOnlyNodesDialSecuredControllers: broker-only nodes register
// with, heartbeat to and follow the metadata of a controller-only node
// whose controller listener is SSL with client certificates required,
// dialing it with that listener's settings (they do not listen on it);
// topics are created and written acks=all through them.
func TestBrokerOnlyNodesDialSecuredControllers(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, dir, "ca")
	leaf := ca.Issue("node", pkix.Name{CommonName: "node"})
	c := startRolesCluster(t, []string{controllerOnly, brokerOnly, brokerOnly}, map[string]string{
		"listener.security.protocol.map":   "CONTROLLER:SSL,PLAINTEXT:PLAINTEXT",
		"controller.listener.names":        "CONTROLLER",
		"ssl.keystore.location":            leaf.File,
		"ssl.truststore.location":          ca.CertFile,
		"ssl.client.auth":                  "required",
		"super.users":                      "User:CN=node",
		"default.replication.factor":       "2",
		"min.insync.replicas":              "2",
		"offsets.topic.replication.factor": "2",
	}, node.Options{})
	ctx := testContext(t, 60*time.Second)
	const topic = "via-secured-controller"
	cl := c.client(kgo.SeedBrokers(c.addrs()[1:]...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 2, nil, topic); err != nil {
		t.Fatalf("create a topic through a broker-only node (forwarded over mutual TLS): %v", err)
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	if n := tlsFailures(t, c); n != 0 {
		t.Errorf("%v TLS handshakes failed on the controller listener", n)
	}
}

// tlsFailures sums skein_tls_handshake_failures_total over the running nodes.
func tlsFailures(t *testing.T, c *testCluster) float64 {
	return clusterCounter(t, c, "skein_tls_handshake_failures_total", nil)
}
