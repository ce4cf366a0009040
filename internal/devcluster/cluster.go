// Package devcluster runs a local cluster of real `skein server`
// processes on 127.0.0.1: the process manager behind `skein dev`, the
// local cluster of `skein verify` (internal/chaos) and the process tests
// of test/e2e. It starts, kills, pauses and stops nodes, and reports a
// node that could not start with its own words instead of waiting on it.
package devcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Ports are the ports one node listens on, on 127.0.0.1 unless its
// properties say otherwise. Admin 0 serves no admin listener. Internal is
// the inter-broker listener of a Secure cluster (unused otherwise).
type Ports struct {
	Client, Controller, Admin, Internal int
}

// BasePorts is the `skein dev` layout: node i (0-based) listens for
// clients on base+100*i, for controllers on that +1, serves /metrics
// and /readyz on that +2 and, when secure, the other brokers on that +3.
func BasePorts(base int) func(i int) Ports {
	return func(i int) Ports {
		p := base + 100*i
		return Ports{Client: p, Controller: p + 1, Admin: p + 2, Internal: p + 3}
	}
}

// Config describes a cluster. Every broker is also a controller unless
// Controllers is positive: then that many controller-only nodes run
// besides the Brokers broker-only ones, taking the node ids after theirs.
type Config struct {
	Bin         string // the skein binary
	Dir         string // data: broker-N/ log directories and broker-N.log files
	Brokers     int
	Controllers int
	// Ports gives node i's ports; nil is BasePorts(9092).
	Ports     func(i int) Ports
	ClusterID string // default "skein-dev"
	// Props are server properties set over the defaults on every node;
	// NodeProps, when set, gives node i's set over those.
	Props     map[string]string
	NodeProps func(i int) map[string]string
	// Output, when set, receives node i's output besides its log file
	// (`skein dev -v`, the tests' log watchers).
	Output func(i int) io.Writer
	// Secure, when set, secures every listener (secure.go); Props and
	// NodeProps still apply over it.
	Secure *Secure
}

// Cluster is a running (or stopped) local cluster. Its methods are not
// safe for concurrent use, except where they say so.
type Cluster struct {
	cfg   Config
	nodes []*process // nil while node i is not running
}

// process is one running node.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been reaped
}

// ErrNotRunning is returned for an operation on a node that is not running.
var ErrNotRunning = errors.New("not running")

// New checks cfg and returns a cluster with no node started.
func New(cfg Config) (*Cluster, error) {
	switch {
	case cfg.Bin == "":
		return nil, errors.New("devcluster: no skein binary")
	case cfg.Dir == "":
		return nil, errors.New("devcluster: no data directory")
	case cfg.Brokers < 1:
		return nil, fmt.Errorf("devcluster: %d brokers", cfg.Brokers)
	case cfg.Controllers < 0:
		return nil, fmt.Errorf("devcluster: %d controllers", cfg.Controllers)
	}
	if cfg.Ports == nil {
		cfg.Ports = BasePorts(9092)
	}
	if cfg.ClusterID == "" {
		cfg.ClusterID = "skein-dev"
	}
	return &Cluster{cfg: cfg, nodes: make([]*process, cfg.Brokers+cfg.Controllers)}, nil
}

// Brokers is how many brokers the cluster has (controller-only nodes not
// counted); Nodes counts both.
func (c *Cluster) Brokers() int { return c.cfg.Brokers }
func (c *Cluster) Nodes() int   { return len(c.nodes) }

// Dir is the cluster's data directory.
func (c *Cluster) Dir() string { return c.cfg.Dir }

// Ports are node i's ports.
func (c *Cluster) Ports(i int) Ports { return c.cfg.Ports(i) }

// NodeDir is node i's log directory (log.dirs).
func (c *Cluster) NodeDir(i int) string {
	return filepath.Join(c.cfg.Dir, fmt.Sprintf("broker-%d", i+1))
}

// LogPath is the file node i's output goes to.
func (c *Cluster) LogPath(i int) string {
	return filepath.Join(c.cfg.Dir, fmt.Sprintf("broker-%d.log", i+1))
}

// Name is how messages call node i.
func (c *Cluster) Name(i int) string {
	if i >= c.cfg.Brokers {
		return "controller " + strconv.Itoa(i+1)
	}
	return "broker " + strconv.Itoa(i+1)
}

// Addrs are the brokers' client addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, c.cfg.Brokers)
	for i := range out {
		out[i] = "127.0.0.1:" + strconv.Itoa(c.cfg.Ports(i).Client)
	}
	return out
}

// AdminAddrs are the brokers' admin (HTTP) addresses; empty when the
// ports give no admin port.
func (c *Cluster) AdminAddrs() []string {
	var out []string
	for i := range c.cfg.Brokers {
		if p := c.cfg.Ports(i).Admin; p > 0 {
			out = append(out, "127.0.0.1:"+strconv.Itoa(p))
		}
	}
	return out
}

// isBroker and isController tell node i's roles.
func (c *Cluster) isBroker(i int) bool     { return c.cfg.Controllers == 0 || i < c.cfg.Brokers }
func (c *Cluster) isController(i int) bool { return c.cfg.Controllers == 0 || i >= c.cfg.Brokers }

// props are the server properties node i runs with.
func (c *Cluster) props(i int) map[string]string {
	ports := c.cfg.Ports(i)
	var voters, listeners, roles []string
	for j := range c.nodes {
		if c.isController(j) {
			voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", j+1, c.cfg.Ports(j).Controller))
		}
	}
	if c.isBroker(i) {
		roles = append(roles, "broker")
		listeners = append(listeners, fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", ports.Client))
	}
	if c.isController(i) {
		roles = append(roles, "controller")
		listeners = append(listeners, fmt.Sprintf("CONTROLLER://127.0.0.1:%d", ports.Controller))
	}
	rf := min(3, c.cfg.Brokers)
	props := map[string]string{
		"node.id":                          strconv.Itoa(i + 1),
		"process.roles":                    strings.Join(roles, ","),
		"cluster.id":                       c.cfg.ClusterID,
		"listeners":                        strings.Join(listeners, ","),
		"controller.quorum.voters":         strings.Join(voters, ","),
		"log.dirs":                         c.NodeDir(i),
		"default.replication.factor":       strconv.Itoa(rf),
		"min.insync.replicas":              strconv.Itoa(max(1, rf-1)),
		"offsets.topic.replication.factor": strconv.Itoa(rf),
		"log.level":                        "info",
	}
	if ports.Admin > 0 && c.isBroker(i) {
		props["admin.listeners"] = fmt.Sprintf("http://127.0.0.1:%d", ports.Admin)
	}
	if c.cfg.Secure != nil {
		maps.Copy(props, c.secureProps(i))
	}
	maps.Copy(props, c.cfg.Props)
	if c.cfg.NodeProps != nil {
		maps.Copy(props, c.cfg.NodeProps(i))
	}
	return props
}

// CheckPorts fails, naming the node and the port, when something already
// listens on a port a node would listen on: another cluster there would
// otherwise answer for this one.
func (c *Cluster) CheckPorts() error {
	for i := range c.nodes {
		ports := c.cfg.Ports(i)
		var want []int
		if c.isBroker(i) {
			want = append(want, ports.Client)
			if ports.Admin > 0 {
				want = append(want, ports.Admin)
			}
			if c.cfg.Secure != nil {
				want = append(want, ports.Internal)
			}
		}
		if c.isController(i) {
			want = append(want, ports.Controller)
		}
		for _, p := range want {
			if err := PortFree("127.0.0.1", p); err != nil {
				return fmt.Errorf("%s cannot start: %w", c.Name(i), err)
			}
		}
	}
	return nil
}

// PortFree checks that nothing listens on host:port.
func PortFree(host string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("port %s:%d is in use (another cluster running?): %w", host, port, err)
	}
	return l.Close()
}

// StartAll checks the ports and starts every node, without waiting for
// any to be ready (WaitReady does).
func (c *Cluster) StartAll() error {
	if err := c.CheckPorts(); err != nil {
		return err
	}
	for i := range c.nodes {
		if err := c.Start(i); err != nil {
			return err
		}
	}
	return nil
}

// Start starts node i (again, on the same data and ports). It does
// nothing if the node is running.
func (c *Cluster) Start(i int) error {
	if c.nodes[i] != nil {
		return nil
	}
	if err := os.MkdirAll(c.cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("%s: data directory: %w", c.Name(i), err)
	}
	args := []string{"server"}
	for k, v := range c.props(i) {
		args = append(args, "--override", k+"="+v)
	}
	cmd := exec.Command(c.cfg.Bin, args...)
	setProcAttr(cmd)
	cmd.Env = c.env()
	logFile, err := os.OpenFile(c.LogPath(i), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: log file: %w", c.Name(i), err)
	}
	var out io.Writer = logFile
	if c.cfg.Output != nil {
		if w := c.cfg.Output(i); w != nil {
			out = io.MultiWriter(logFile, w)
		}
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", c.Name(i), err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	c.nodes[i] = p
	go func() {
		cmd.Wait() // a killed node's exit status is expected
		logFile.Close()
		close(p.exited)
	}()
	return nil
}

// env is a node's environment: this process's, with GOMAXPROCS set to
// this process's share of the CPUs among the nodes (at least 1) unless
// the caller set GOMAXPROCS itself. All nodes run on one machine, and a
// Go process with more Ps than it gets CPUs spins Ms looking for work and
// hands Ps between threads at each wake-up. Three brokers with
// GOMAXPROCS=2 each on 2 cores spent 9–13% more CPU on the same produce
// load than with 1 each (docs/performance.md, "Three brokers, two cores:
// the Ps"). One broker to a machine, as deployed, keeps all its CPUs.
func (c *Cluster) env() []string {
	env := os.Environ()
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		return env
	}
	procs := max(1, runtime.GOMAXPROCS(0)/len(c.nodes))
	return append(env, "GOMAXPROCS="+strconv.Itoa(procs))
}

// Running reports whether node i was started and not stopped or reaped.
func (c *Cluster) Running(i int) bool { return c.nodes[i] != nil }

// Pid is node i's process id, 0 when it is not running.
func (c *Cluster) Pid(i int) int {
	if p := c.nodes[i]; p != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// Exited returns a channel closed once node i's current process has
// exited; nil when it is not running.
func (c *Cluster) Exited(i int) <-chan struct{} {
	if p := c.nodes[i]; p != nil {
		return p.exited
	}
	return nil
}

// ReapExited forgets node i's process if it has exited by itself (a
// broker whose log directory fails stops), and reports whether it had.
func (c *Cluster) ReapExited(i int) bool {
	p := c.nodes[i]
	if p == nil {
		return false
	}
	select {
	case <-p.exited:
		c.nodes[i] = nil
		return true
	default:
		return false
	}
}

// Signal sends sig to node i.
func (c *Cluster) Signal(i int, sig os.Signal) error {
	p := c.nodes[i]
	if p == nil {
		return fmt.Errorf("%s: %w", c.Name(i), ErrNotRunning)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s: %v: %w", c.Name(i), sig, err)
	}
	return nil
}

// Kill sends SIGKILL (no flush, no controlled shutdown, sockets dropped)
// and waits until node i is gone. It does nothing if it is not running.
func (c *Cluster) Kill(i int) {
	if p := c.nodes[i]; p != nil {
		p.cmd.Process.Kill()
		<-p.exited
		c.nodes[i] = nil
	}
}

// Terminate sends SIGTERM (a controlled shutdown) to node i and waits for
// it to exit, killing it if that takes longer than grace. It reports
// whether the node had to be killed.
func (c *Cluster) Terminate(i int, grace time.Duration) (killed bool, err error) {
	p := c.nodes[i]
	if p == nil {
		return false, nil
	}
	if err := c.Signal(i, syscall.SIGTERM); err != nil {
		return false, err
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		c.nodes[i] = nil
		return false, nil
	case <-t.C:
		c.Kill(i)
		return true, nil
	}
}

// Pause sends SIGSTOP to node i and waits until it has stopped: it stops
// fetching and heartbeating, but its sockets stay open, so nothing
// notices until a timeout. Once Pause returns the node sends nothing more.
func (c *Cluster) Pause(i int) error {
	if err := c.Signal(i, syscall.SIGSTOP); err != nil {
		return err
	}
	if err := waitStopped(c.Pid(i)); err != nil {
		return fmt.Errorf("%s did not stop: %w", c.Name(i), err)
	}
	return nil
}

// Resume sends SIGCONT to node i.
func (c *Cluster) Resume(i int) error { return c.Signal(i, syscall.SIGCONT) }

// StopGrace is how long Stop lets the nodes shut down cleanly before it
// kills them: a person pressing Ctrl-C waits this long at most.
const StopGrace = 5 * time.Second

// Stop sends SIGTERM to every running node (a paused one is resumed
// first, or it could not shut down), waits up to grace for all of them,
// then kills those still running. No process is left when it returns.
func (c *Cluster) Stop(grace time.Duration) {
	for _, p := range c.nodes {
		if p != nil {
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	expired := false
	for i, p := range c.nodes {
		if p == nil {
			continue
		}
		if !expired {
			select {
			case <-p.exited:
			case <-deadline.C:
				expired = true
			}
		}
		if expired {
			p.cmd.Process.Kill()
			<-p.exited
		}
		c.nodes[i] = nil
	}
}

// Client returns a client seeded with the brokers' addresses; on a
// Secure cluster, with their INTERNAL ones, where it presents the node
// certificate (a super user).
func (c *Cluster) Client(opts ...kgo.Opt) (*kgo.Client, error) {
	if c.cfg.Secure != nil {
		tlsCfg, err := c.cfg.Secure.CA.NodeTLS()
		if err != nil {
			return nil, err
		}
		return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.InternalAddrs()...), kgo.DialTLSConfig(tlsCfg)}, opts...)...)
	}
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...)}, opts...)...)
}

// readyPoll is how often WaitReady looks at the cluster; readyAttempt
// bounds one look.
const (
	readyPoll    = 100 * time.Millisecond
	readyAttempt = time.Second
)

// WaitReady waits until every broker is registered, as Metadata shows. A
// node that exits meanwhile fails it at once, with the node's last words.
// Each attempt uses a fresh client: a client caches metadata, and an
// early answer lists only the brokers registered by then.
func (c *Cluster) WaitReady(ctx context.Context) error {
	for {
		if err := c.exitedNode(); err != nil {
			return err
		}
		if c.brokersVisible(ctx) == c.cfg.Brokers {
			// A node that failed while the others came up is not ready.
			return c.exitedNode()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the cluster did not come up (see %s): %w", filepath.Join(c.cfg.Dir, "broker-*.log"), ctx.Err())
		case <-time.After(readyPoll):
		}
	}
}

// exitedNode names the first started node whose process has exited, and
// why, as its log's last lines tell.
func (c *Cluster) exitedNode() error {
	for i, p := range c.nodes {
		if p == nil {
			continue
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited (%v): %s (log: %s)", c.Name(i), p.cmd.ProcessState, lastWords(c.LogPath(i)), c.LogPath(i))
		default:
		}
	}
	return nil
}

// lastWordsLines is how many lines of a node's log an exit shows: a
// server that fails to start says why on its last line.
const lastWordsLines = 1

// lastWords is the end of a log file, on one line.
func lastWords(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "no log: " + err.Error()
	}
	lines := strings.Split(string(bytes.TrimSpace(b)), "\n")
	if len(lines) > lastWordsLines {
		lines = lines[len(lines)-lastWordsLines:]
	}
	return strings.Join(lines, " | ")
}

func (c *Cluster) brokersVisible(ctx context.Context) int {
	cl, err := c.Client()
	if err != nil {
		return 0
	}
	defer cl.Close()
	// A short deadline: the client retries refused connections until
	// its context ends.
	attempt, cancel := context.WithTimeout(ctx, readyAttempt)
	defer cancel()
	md, err := kadm.NewClient(cl).BrokerMetadata(attempt)
	if err != nil {
		return 0
	}
	return len(md.Brokers)
}

// PartitionState reads leader, epoch and ISR of a partition. It asks
// with a fresh client each time: a client's metadata cache may be seconds
// old, which would show a leader that is no longer one.
func (c *Cluster) PartitionState(ctx context.Context, topic string, p int32) (leader, epoch int32, isr []int32, err error) {
	cl, err := c.Client()
	if err != nil {
		return -1, -1, nil, err
	}
	defer cl.Close()
	attempt, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(attempt, topic)
	if err != nil {
		return -1, -1, nil, err
	}
	pd, ok := md.Topics[topic].Partitions[p]
	if !ok {
		return -1, -1, nil, fmt.Errorf("no partition %s/%d", topic, p)
	}
	return pd.Leader, pd.LeaderEpoch, pd.ISR, pd.Err
}

// pollInterval is how often WaitFor looks again.
const pollInterval = 50 * time.Millisecond

// WaitFor polls until cond holds, bounded by ctx: the cluster's state is
// seen only through requests, so there is no event to wait on.
func WaitFor(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
	return nil
}
