package e2e

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/testcluster"
	"github.com/skein-log/skein/internal/testport"
	"github.com/skein-log/skein/internal/vfs"
)

// testCluster is n in-process brokers, each also a controller, on
// 127.0.0.1. Controller ports are fixed up front (the voters list names
// them); client ports are chosen once and kept across restarts.
type testCluster struct {
	t       testing.TB
	brokers []*node.Broker
	props   []map[string]string
	opts    node.Options // Logger is set per start
	// dumped makes the goroutine dump of a failed test happen once, before
	// the first cleanup stops a broker.
	dumped sync.Once
}

// dumpGoroutinesIfFailed writes every goroutine's stack to the test log
// when the test failed: a stall (a request parked forever, a lock held)
// is then visible in the log of the run that hit it. Call it before
// stopping brokers, which would end the evidence.
func (c *testCluster) dumpGoroutinesIfFailed() {
	c.dumped.Do(func() {
		if !c.t.Failed() {
			return
		}
		var buf bytes.Buffer
		if err := pprof.Lookup("goroutine").WriteTo(&buf, 2); err != nil {
			c.t.Logf("goroutine dump: %v", err)
			return
		}
		c.t.Logf("goroutines at failure:\n%s", buf.String())
	})
}

// freePort reserves a port for a node the test may restart on the same
// address (see internal/testport for why not port 0).
func freePort(t testing.TB) int {
	t.Helper()
	return testport.One(t)
}

func startCluster(t testing.TB, n int, extra map[string]string) *testCluster {
	t.Helper()
	return startRolesCluster(t, testcluster.Combine(n), extra, node.Options{})
}

// Values of process.roles for startRolesCluster.
const (
	combinedRoles  = testcluster.Combined
	controllerOnly = testcluster.ControllerOnly
	brokerOnly     = testcluster.BrokerOnly
)

// startRolesCluster starts one node per entry of roles (node ids 1..n,
// testcluster.Props) and waits until they registered.
func startRolesCluster(t testing.TB, roles []string, extra map[string]string, opts node.Options) *testCluster {
	t.Helper()
	c := newRolesCluster(t, roles, extra, opts)
	for i := range c.props {
		c.start(i)
	}
	c.waitRegistered()
	return c
}

// newRolesCluster is startRolesCluster's cluster before any node starts,
// for a test that changes a node's properties first.
func newRolesCluster(t testing.TB, roles []string, extra map[string]string, opts node.Options) *testCluster {
	t.Helper()
	c := &testCluster{t: t, brokers: make([]*node.Broker, len(roles)), props: testcluster.Props(t, roles, extra), opts: opts}
	t.Cleanup(func() {
		// Crash them: a clean stop of the last brokers, once the quorum
		// is gone, waits for a controller that cannot answer.
		for i := range c.brokers {
			c.kill(i)
		}
	})
	return c
}

func (c *testCluster) start(i int) {
	c.t.Helper()
	opts := c.opts
	opts.Logger = testLogger()
	c.startWith(i, opts)
}

// startOn starts node i with the cluster's options on filesystem fs.
func (c *testCluster) startOn(i int, fs vfs.FS) {
	c.t.Helper()
	opts := c.opts
	opts.FS, opts.Logger = fs, testLogger()
	c.startWith(i, opts)
}

// testLogger is a node's logger: on stderr with -v, else discarded.
func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startWith starts node i with opts instead of the cluster's (a test's own
// filesystem seam or log sink for one node).
func (c *testCluster) startWith(i int, opts node.Options) {
	c.t.Helper()
	c.brokers[i] = testcluster.Start(c.t, c.props[i], opts)
}

// stop closes a broker cleanly (controlled shutdown).
func (c *testCluster) stop(i int) {
	if c.brokers[i] != nil {
		c.brokers[i].Close()
		c.brokers[i] = nil
	}
}

// kill stops a broker as a crash would.
func (c *testCluster) kill(i int) {
	if c.brokers[i] != nil {
		c.brokers[i].Halt()
		c.brokers[i] = nil
	}
}

func (c *testCluster) waitRegistered() {
	c.t.Helper()
	testcluster.WaitRegistered(c.t, c.brokers)
}

// addrs are the client listeners of the nodes with the broker role.
func (c *testCluster) addrs() []string {
	var out []string
	for i := range c.props {
		if first := strings.Split(c.props[i]["listeners"], ",")[0]; strings.HasPrefix(first, "PLAINTEXT://") {
			out = append(out, strings.TrimPrefix(first, "PLAINTEXT://"))
		}
	}
	return out
}

func (c *testCluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addrs()...)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// leaderOf asks the cluster which broker leads a partition (1-based id).
func (c *testCluster) leaderOf(ctx context.Context, topic string, partition int32) int32 {
	c.t.Helper()
	adm := kadm.NewClient(c.client())
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if p, ok := md.Topics[topic].Partitions[partition]; ok && p.Leader >= 0 && p.Err == nil {
				return p.Leader
			}
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("no leader for %s/%d: %v", topic, partition, ctx.Err())
		case <-time.After(50 * time.Millisecond): // polling an external view; bounded by ctx
		}
	}
}

// awaitDeposed waits until no running broker but leader still acts as the
// leader of topic-partition. Metadata can name the new leader while a
// deposed one that is alive (moved by a preferred election, say) has not
// yet applied the change: until it does, it takes writes in its old epoch,
// and an acks=1 write from a client with stale metadata lands there, is
// acknowledged and is later truncated away. Tests that produce acks=1
// right after a leader change, and count on the new leader's log, wait
// for this first. The brokers' own state is read, polled like an
// external view.
func (c *testCluster) awaitDeposed(ctx context.Context, topic string, partition int32, leader int32) {
	c.t.Helper()
	for i, b := range c.brokers {
		id := int32(i + 1)
		if b == nil || id == leader {
			continue
		}
		for {
			if _, leads := b.LeaderISR(topic, partition); !leads {
				break
			}
			select {
			case <-ctx.Done():
				c.t.Fatalf("broker %d still leads %s-%d after broker %d took over", id, topic, partition, leader)
			case <-time.After(10 * time.Millisecond): // an internal view, polled
			}
		}
	}
}
