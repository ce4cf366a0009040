// Package testcluster builds in-process clusters of node.Broker on
// reserved loopback ports, for the tests that need a real cluster
// (test/e2e and cmd/skein's command tests): one place decides the nodes'
// properties, how a node starts and how a test waits for registration.
package testcluster

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/testport"
)

// ClusterID is every test cluster's cluster.id.
const ClusterID = "skein-test-cluster"

// Values of process.roles for Props.
const (
	Combined       = "broker,controller"
	ControllerOnly = "controller"
	BrokerOnly     = "broker"
)

// Combine is n combined (broker and controller) roles.
func Combine(n int) []string {
	roles := make([]string, n)
	for i := range roles {
		roles[i] = Combined
	}
	return roles
}

// Props returns the properties of one node per entry of roles (node ids
// 1..n) on reserved ports of 127.0.0.1, with log directories under one
// test directory: the nodes with the controller role are the voters,
// listening on CONTROLLER only when they are not brokers too; broker-only
// nodes listen on PLAINTEXT only. Heartbeats, sessions and replica lag are
// short, so a test sees a dead node within seconds. extra overrides any of
// them. The ports stay the node's across restarts.
func Props(t testing.TB, roles []string, extra map[string]string) []map[string]string {
	t.Helper()
	n := len(roles)
	dir := t.TempDir()
	var voters []string
	ctrlPorts := make([]int, n)
	clientPorts := make([]int, n)
	for i := range n {
		ctrlPorts[i], clientPorts[i] = testport.One(t), testport.One(t)
		if strings.Contains(roles[i], "controller") {
			voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ctrlPorts[i]))
		}
	}
	out := make([]map[string]string, n)
	for i := range n {
		var listeners []string
		if strings.Contains(roles[i], "broker") {
			listeners = append(listeners, fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", clientPorts[i]))
		}
		if strings.Contains(roles[i], "controller") {
			listeners = append(listeners, fmt.Sprintf("CONTROLLER://127.0.0.1:%d", ctrlPorts[i]))
		}
		props := map[string]string{
			"node.id":                      strconv.Itoa(i + 1),
			"process.roles":                roles[i],
			"cluster.id":                   ClusterID,
			"listeners":                    strings.Join(listeners, ","),
			"controller.quorum.voters":     strings.Join(voters, ","),
			"log.dirs":                     filepath.Join(dir, fmt.Sprintf("broker-%d", i+1)),
			"broker.heartbeat.interval.ms": "200",
			"broker.session.timeout.ms":    "3000",
			"replica.lag.time.max.ms":      "2000",
			"replica.fetch.wait.max.ms":    "100",
		}
		for k, v := range extra {
			props[k] = v
		}
		out[i] = props
	}
	return out
}

// Start starts a node from props, failing t when its configuration is
// refused or it cannot start.
func Start(t testing.TB, props map[string]string, opts node.Options) *node.Broker {
	t.Helper()
	cfg, err := config.NewBroker(props)
	if err != nil {
		t.Fatalf("node %s config: %v", props["node.id"], err)
	}
	b := node.New(cfg, opts)
	if err := b.Start(); err != nil {
		t.Fatalf("start node %s: %v", props["node.id"], err)
	}
	return b
}

// WaitRegistered waits until each running node (nil: not running) has
// registered (node.Broker.Registered), failing t after 30 s.
func WaitRegistered(t testing.TB, nodes []*node.Broker) {
	t.Helper()
	for i, b := range nodes {
		if b == nil {
			continue
		}
		select {
		case <-b.Registered():
		case <-time.After(30 * time.Second):
			t.Fatalf("node %d did not register within 30 s", i+1)
		}
	}
}

// Buffer is a bytes.Buffer safe for the goroutines that write a node's
// or a process's output while the test reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Dynamic turns Props' static quorum into a dynamic one (KIP-853): every
// node finds it through controller.quorum.bootstrap.servers (the
// controllers' CONTROLLER listeners), and node 1 founds it alone
// (controller.quorum.standalone); the other controllers wait to be added.
func Dynamic(props []map[string]string) {
	var boot []string
	for _, p := range props {
		if addr := ControllerAddr(p); addr != "" {
			boot = append(boot, addr)
		}
	}
	for i, p := range props {
		delete(p, "controller.quorum.voters")
		p["controller.quorum.bootstrap.servers"] = strings.Join(boot, ",")
		if i == 0 {
			p["controller.quorum.standalone"] = "true"
		}
	}
}

// ControllerAddr is the host:port of a node's CONTROLLER listener, "" if
// it has none.
func ControllerAddr(props map[string]string) string {
	for _, l := range strings.Split(props["listeners"], ",") {
		if addr, ok := strings.CutPrefix(l, "CONTROLLER://"); ok {
			return addr
		}
	}
	return ""
}
