package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/devcluster"
)

// The Compose variant: faults on the containers of a cluster started with
// deploy/docker-compose.yml (services broker-1, broker-2, ... on the
// network "skein", node ids matching the service numbers), inflicted with
// the docker CLI: docker kill and start, docker pause and unpause, docker
// stop and start for rolling restarts, docker network disconnect and
// connect for partitions. A disconnected broker is cut off from everyone,
// clients included.
const (
	composeMaxBrokers = 9
	dockerTimeout     = 90 * time.Second
	// composeNetwork is the network's name in docker-compose.yml.
	composeNetwork = "skein"
)

// ComposeFaults are the kinds the docker CLI can inflict.
var ComposeFaults = []FaultKind{FaultKill, FaultPause, FaultRestart, FaultIsolateLeader, FaultIsolateController, FaultIsolateMinority}

// composeNemesis inflicts faults on a Compose cluster's containers.
type composeNemesis struct {
	project    string
	network    string   // the Docker network's name
	containers []string // container ids, by node index (node id - 1)
	seeds      []string
	clientOpts []kgo.Opt // seeds and the cluster's security
	faultBook
	topic string
	parts int
	rf    int
	// What heal must undo, by node index.
	paused, stopped, disconnected []bool
}

// docker runs the docker CLI and returns its trimmed output.
func docker(ctx context.Context, args ...string) (string, error) {
	dctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	out, err := exec.CommandContext(dctx, "docker", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// newComposeNemesis finds the containers and network of Compose project
// project, or says plainly why it cannot.
func newComposeNemesis(ctx context.Context, project string, seeds []string, rec *recorder, cfg *Config, log io.Writer) (*composeNemesis, error) {
	if _, err := exec.LookPath("docker"); err != nil {
		return nil, errors.New("--compose needs the docker CLI, which is not installed here")
	}
	if _, err := docker(ctx, "info", "--format", "{{.ServerVersion}}"); err != nil {
		return nil, fmt.Errorf("--compose needs a working Docker daemon: %w", err)
	}
	label := "label=com.docker.compose.project=" + project
	n := &composeNemesis{faultBook: newFaultBook(rec, log), project: project, seeds: seeds, clientOpts: cfg.clientOpts(seeds), topic: cfg.Topic, parts: cfg.Partitions,
		rf: cfg.ReplicationFactor}
	for id := 1; id <= composeMaxBrokers; id++ {
		c, err := docker(ctx, "ps", "-aq", "--filter", label, "--filter", "label=com.docker.compose.service=broker-"+strconv.Itoa(id))
		if err != nil {
			return nil, err
		}
		if c == "" {
			break
		}
		n.containers = append(n.containers, strings.Fields(c)[0])
	}
	if len(n.containers) == 0 {
		return nil, fmt.Errorf("--compose %s: no broker-N containers in that project (start it: docker compose -p %s -f deploy/docker-compose.yml up -d)", project, project)
	}
	net, err := docker(ctx, "network", "ls", "-q", "--filter", label, "--filter", "label=com.docker.compose.network="+composeNetwork)
	if err != nil {
		return nil, err
	}
	if net == "" {
		return nil, fmt.Errorf("--compose %s: no network %q in that project", project, composeNetwork)
	}
	n.network = strings.Fields(net)[0]
	n.paused, n.stopped, n.disconnected = make([]bool, len(n.containers)), make([]bool, len(n.containers)), make([]bool, len(n.containers))
	return n, nil
}

func (n *composeNemesis) brokers() int { return len(n.containers) }

func service(i int) string { return "broker-" + strconv.Itoa(i+1) }

func (n *composeNemesis) run(ctx context.Context, plan []FaultStep, deadline time.Time) error {
	for _, s := range plan {
		if !sleepCtx(ctx, s.quiet) {
			return nil
		}
		length := s.hold
		if s.kind == FaultRestart {
			length = time.Duration(len(n.containers)) * restartEstimate
		}
		if time.Now().Add(length).After(deadline) {
			return nil
		}
		if err := n.inflict(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// inflict does one step of the plan.
func (n *composeNemesis) inflict(ctx context.Context, s FaultStep) error {
	i := s.broker
	switch s.kind {
	case FaultKill:
		return n.hold(ctx, i, s, fmt.Sprintf("docker kill %s", service(i)), &n.stopped,
			[]string{"kill", "-s", "KILL", n.containers[i]}, []string{"start", n.containers[i]})
	case FaultPause:
		return n.hold(ctx, i, s, fmt.Sprintf("docker pause %s", service(i)), &n.paused,
			[]string{"pause", n.containers[i]}, []string{"unpause", n.containers[i]})
	case FaultRestart:
		for i := range n.containers {
			id := n.begin(i, FaultRestart, fmt.Sprintf("docker stop %s (rolling restart)", service(i)))
			n.stopped[i] = true
			if _, err := docker(ctx, "stop", "-t", strconv.Itoa(int(terminateTimeout/time.Second)), n.containers[i]); err != nil {
				return err
			}
			if _, err := docker(ctx, "start", n.containers[i]); err != nil {
				return err
			}
			n.stopped[i] = false
			n.end(id, fmt.Sprintf("docker start %s (rolling restart)", service(i)))
			wctx, cancel := context.WithTimeout(ctx, rejoinTimeout)
			err := topicReady(wctx, n.clientOpts, n.topic, n.parts, n.rf)
			cancel()
			if err != nil {
				fmt.Fprintf(n.log, "nemesis: %s did not rejoin every ISR within %v; going on\n", service(i), rejoinTimeout)
			}
		}
		return nil
	case FaultIsolateLeader:
		partition := s.partition % int32(n.parts)
		i = n.lookup(ctx, func(md kadm.Metadata) int32 { return md.Topics[n.topic].Partitions[partition].Leader }, i)
	case FaultIsolateController:
		i = n.lookup(ctx, func(md kadm.Metadata) int32 { return md.Controller }, i)
	case FaultIsolateMinority:
		// With 3 brokers a minority is one; larger clusters get one too.
	default:
		return fmt.Errorf("%s faults are not available with --compose", s.kind)
	}
	return n.hold(ctx, i, s, fmt.Sprintf("docker network disconnect %s (%s)", service(i), s.kind), &n.disconnected,
		[]string{"network", "disconnect", "-f", n.network, n.containers[i]},
		[]string{"network", "connect", "--alias", service(i), n.network, n.containers[i]})
}

// hold runs do, marks broker i in state for heal, waits s.hold, runs undo.
func (n *composeNemesis) hold(ctx context.Context, i int, s FaultStep, note string, state *[]bool, do, undo []string) error {
	id := n.begin(i, s.kind, note)
	if _, err := docker(ctx, do...); err != nil {
		return err
	}
	(*state)[i] = true
	if !sleepCtx(ctx, s.hold) {
		return nil
	}
	if _, err := docker(ctx, undo...); err != nil {
		return err
	}
	(*state)[i] = false
	n.end(id, "undone: "+note)
	return nil
}

// lookup asks the cluster (bounded by lookupTimeout) for a node id, and
// returns its index, or fallback.
func (n *composeNemesis) lookup(ctx context.Context, pick func(kadm.Metadata) int32, fallback int) int {
	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	cl, err := kgo.NewClient(n.clientOpts...)
	if err == nil {
		defer cl.Close()
		var md kadm.Metadata
		if md, err = kadm.NewClient(cl).Metadata(lctx, n.topic); err == nil {
			if id := pick(md); id >= 1 && int(id) <= len(n.containers) {
				return int(id) - 1
			}
		}
	}
	fmt.Fprintf(n.log, "nemesis: lookup failed (%v); hitting %s\n", err, service(fallback))
	return fallback
}

// heal reconnects, unpauses and starts every container a fault left so.
func (n *composeNemesis) heal() error {
	ctx := context.Background()
	var errs []error
	for i, c := range n.containers {
		if n.disconnected[i] {
			if _, err := docker(ctx, "network", "connect", "--alias", service(i), n.network, c); err != nil {
				errs = append(errs, err)
			}
			n.disconnected[i] = false
		}
		if n.paused[i] {
			if _, err := docker(ctx, "unpause", c); err != nil {
				errs = append(errs, err)
			}
			n.paused[i] = false
		}
		if n.stopped[i] {
			if _, err := docker(ctx, "start", c); err != nil {
				errs = append(errs, err)
			}
			n.stopped[i] = false
		}
	}
	n.endAll(service)
	return errors.Join(errs...)
}

// waitWhole waits until Metadata lists every broker.
func (n *composeNemesis) waitWhole(ctx context.Context) error {
	return devcluster.WaitFor(ctx, "every compose broker to be registered", func() bool {
		cl, err := kgo.NewClient(n.clientOpts...)
		if err != nil {
			return false
		}
		defer cl.Close()
		attempt, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		md, err := kadm.NewClient(cl).BrokerMetadata(attempt)
		return err == nil && len(md.Brokers) == len(n.containers)
	})
}
