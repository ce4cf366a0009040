package chaos

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/devcluster"
	"github.com/skein-log/skein/internal/verify"
)

// Nemesis bounds.
const (
	// terminateTimeout bounds a SIGTERM'd broker's controlled shutdown
	// before it is killed instead.
	terminateTimeout = 45 * time.Second
	// rejoinTimeout bounds the wait, during a rolling restart, for a
	// restarted broker to be back in every ISR before the next one goes.
	rejoinTimeout = 30 * time.Second
)

// faultDriver inflicts a schedule of faults on a cluster and undoes them:
// the local cluster's processes and proxies (nemesis), or a Compose
// cluster's containers (composeNemesis).
type faultDriver interface {
	// run follows plan until it ends, ctx ends or the next fault would not
	// be over by deadline.
	run(ctx context.Context, plan []FaultStep, deadline time.Time) error
	// heal undoes every fault still in place; safe to call more than once.
	heal() error
	// waitWhole waits until every broker is registered again.
	waitWhole(ctx context.Context) error
	// brokers is how many brokers faults may hit.
	brokers() int
}

func (n *nemesis) waitWhole(ctx context.Context) error { return n.c.WaitReady(ctx) }
func (n *nemesis) brokers() int                        { return n.c.Brokers() }

// openFault is a fault inflicted and not yet undone.
type openFault struct {
	broker int // 0-based
	kind   FaultKind
}

// faultBook numbers the faults a driver inflicts, records their start and
// end in the history and the log, and remembers which are still open.
type faultBook struct {
	rec    *recorder
	log    io.Writer
	lastID int
	open   map[int]openFault // fault id -> what to undo
}

func newFaultBook(rec *recorder, log io.Writer) faultBook {
	return faultBook{rec: rec, log: log, open: map[int]openFault{}}
}

// begin records the start of a fault and returns its id.
func (b *faultBook) begin(broker int, kind FaultKind, note string) int {
	b.lastID++
	b.open[b.lastID] = openFault{broker: broker, kind: kind}
	b.rec.add(verify.Event{Type: verify.EventFaultStart, Fault: b.lastID, Broker: broker + 1, Note: note})
	fmt.Fprintf(b.log, "nemesis: %s\n", note)
	return b.lastID
}

func (b *faultBook) end(id int, note string) {
	f := b.open[id]
	delete(b.open, id)
	b.rec.add(verify.Event{Type: verify.EventFaultEnd, Fault: id, Broker: f.broker + 1, Note: note})
	fmt.Fprintf(b.log, "nemesis: %s\n", note)
}

// endAll records the end of every open fault, as healed.
func (b *faultBook) endAll(name func(broker int) string) {
	for _, id := range slices.Sorted(maps.Keys(b.open)) {
		b.end(id, "healed "+name(b.open[id].broker))
	}
}

// nemesis inflicts faults on the brokers of a local cluster, records each
// in the history, and can always heal them all.
type nemesis struct {
	faultBook
	c         *devcluster.Cluster
	vn        *faultNetwork // the fault proxies; nil: no network faults
	topic     string
	parts     int
	rf        int
	producers int
	consumers int // assigned consumers and group members, all from the consumers' network
	// transformers of the txn workload's chain, and its group ("": no
	// chain)
	transformers int
	chainGroup   string
	paused       []bool
	limited      []bool // file size limited (disk-full)
	// stopping: the run ends without its history being judged (Ctrl-C),
	// so heal starts no broker that is down only to stop it again.
	stopping bool
}

func newNemesis(c *devcluster.Cluster, vn *faultNetwork, rec *recorder, cfg *Config, log io.Writer) *nemesis {
	return &nemesis{faultBook: newFaultBook(rec, log), c: c, vn: vn, topic: cfg.Topic, parts: cfg.Partitions, rf: cfg.ReplicationFactor,
		producers: cfg.Producers, consumers: cfg.Consumers + cfg.GroupMembers, transformers: cfg.Transformers, chainGroup: cfg.ChainGroup, paused: make([]bool, c.Brokers()), limited: make([]bool, c.Brokers())}
}

// run follows plan until it ends, ctx ends or the next fault would not be
// over by deadline. It leaves faults in place only when ctx ends; heal
// undoes them.
func (n *nemesis) run(ctx context.Context, plan []FaultStep, deadline time.Time) error {
	for _, s := range plan {
		if !sleepCtx(ctx, s.quiet) {
			return nil
		}
		length := s.hold
		switch s.kind {
		case FaultRestart:
			length = time.Duration(n.c.Brokers()) * restartEstimate
		case FaultCorrupt:
			length = corruptEstimate
		}
		if time.Now().Add(length).After(deadline) {
			return nil // a slow rolling restart used up the window
		}
		var err error
		switch s.kind {
		case FaultKill:
			target, why := n.chainTargetOr(ctx, s)
			err = n.killFor(ctx, target, s.hold, why)
		case FaultPause:
			target, why := n.chainTargetOr(ctx, s)
			err = n.pauseFor(ctx, target, s.hold, why)
		case FaultRestart:
			err = n.rollingRestart(ctx)
		case FaultIsolateLeader, FaultIsolateController, FaultIsolateMinority, FaultCutClients, FaultSlow:
			err = n.networkFault(ctx, s)
		case FaultCorrupt:
			err = n.corrupt(ctx, s)
		case FaultDiskFull:
			err = n.diskFullFor(ctx, s)
		case FaultReassign:
			err = n.reassign(ctx, s)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// killFor kills broker i (why: what it is to the workload, or "") and
// starts it again after hold.
func (n *nemesis) killFor(ctx context.Context, i int, hold time.Duration, why string) error {
	id := n.begin(i, FaultKill, fmt.Sprintf("kill -9 broker %d%s", i+1, why))
	n.c.Kill(i)
	if !sleepCtx(ctx, hold) {
		return nil
	}
	if err := n.c.Start(i); err != nil {
		return fmt.Errorf("restart killed broker %d: %w", i+1, err)
	}
	n.end(id, fmt.Sprintf("started broker %d again", i+1))
	return nil
}

func (n *nemesis) pauseFor(ctx context.Context, i int, hold time.Duration, why string) error {
	if !n.c.Running(i) {
		return nil
	}
	id := n.begin(i, FaultPause, fmt.Sprintf("pause broker %d%s (SIGSTOP)", i+1, why))
	if err := n.c.Pause(i); err != nil {
		return err
	}
	n.paused[i] = true
	if !sleepCtx(ctx, hold) {
		return nil
	}
	if err := n.c.Resume(i); err != nil {
		return err
	}
	n.paused[i] = false
	n.end(id, fmt.Sprintf("resumed broker %d (SIGCONT)", i+1))
	return nil
}

// rollingRestart stops each broker in turn with SIGTERM (a controlled
// shutdown: its leaderships move first), starts it again and waits for it
// to be back in every ISR before moving on, as an operator would.
func (n *nemesis) rollingRestart(ctx context.Context) error {
	for i := range n.c.Brokers() {
		if ctx.Err() != nil {
			return nil
		}
		id := n.begin(i, FaultRestart, fmt.Sprintf("terminate broker %d (rolling restart)", i+1))
		if err := n.terminate(i); err != nil {
			return err
		}
		if err := n.c.Start(i); err != nil {
			return fmt.Errorf("start broker %d in the rolling restart: %w", i+1, err)
		}
		n.end(id, fmt.Sprintf("started broker %d again (rolling restart)", i+1))
		wctx, cancel := context.WithTimeout(ctx, rejoinTimeout)
		err := n.waitFullISR(wctx)
		cancel()
		if err != nil {
			fmt.Fprintf(n.log, "nemesis: broker %d did not rejoin every ISR within %v; going on\n", i+1, rejoinTimeout)
		}
	}
	return nil
}

// terminate sends SIGTERM to broker i and waits for it to exit, killing
// it if its shutdown takes longer than terminateTimeout.
func (n *nemesis) terminate(i int) error {
	killed, err := n.c.Terminate(i, terminateTimeout)
	if killed {
		fmt.Fprintf(n.log, "nemesis: broker %d did not stop within %v of SIGTERM; killed it\n", i+1, terminateTimeout)
	}
	return err
}

// heal undoes every fault still in place: mends every link, lifts file
// size limits, resumes paused brokers and starts dead ones. It is safe to
// call at any time, more than once.
func (n *nemesis) heal() error {
	var firstErr error
	if n.vn != nil {
		n.vn.net.HealAll()
	}
	for i := range n.c.Brokers() {
		if n.limited[i] && n.c.ReapExited(i) {
			n.limited[i] = false // it stopped on its full disk; started below
		}
		if n.limited[i] && n.c.Running(i) {
			if err := liftFileSizeLimit(n.c.Pid(i)); err != nil && firstErr == nil {
				firstErr = fmt.Errorf("lift the file size limit of broker %d: %w", i+1, err)
			}
		}
		n.limited[i] = false
		if n.paused[i] && n.c.Running(i) {
			if err := n.c.Resume(i); err != nil && firstErr == nil {
				firstErr = err
			}
		}
		n.paused[i] = false
		if !n.c.Running(i) && !n.stopping {
			if err := n.c.Start(i); err != nil && firstErr == nil {
				firstErr = fmt.Errorf("start broker %d: %w", i+1, err)
			}
		}
	}
	n.endAll(func(broker int) string { return fmt.Sprintf("broker %d", broker+1) })
	return firstErr
}

// waitFullISR waits until every partition of the topic has a leader and
// all its replicas in sync.
func (n *nemesis) waitFullISR(ctx context.Context) error {
	return topicReady(ctx, []kgo.Opt{kgo.SeedBrokers(n.c.Addrs()...)}, n.topic, n.parts, n.rf)
}

// sleepCtx waits for d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
