package node

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/ctrlcore"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/producer"
)

// controllerService runs the active controller's core (ctrlcore: broker
// sessions, fencing, ISR changes, producer id blocks, admin commits, all
// through one decision queue) under a mutex, with a ticker, the socket
// probes, and the quorum's blocking Propose on a goroutine per proposal.
// On a node that is not the active controller every call fails with
// NOT_CONTROLLER and the caller retries elsewhere.
type controllerService struct {
	b *Broker

	mu   sync.Mutex
	core *ctrlcore.Core
	// wake asks the loop to run now (activation, a closed session).
	wake chan struct{}
}

func newControllerService(b *Broker) *controllerService {
	return &controllerService{b: b, core: ctrlcore.New(ctrlcore.ConfigFor(b.cfg, producer.DefaultIDBlockSize)), wake: make(chan struct{}, 1)}
}

// Step runs one event on the core and carries out what it returns
// (ctrlcore.Runtime).
func (c *controllerService) Step(ev func(*ctrlcore.Core, time.Time, *metadata.Image) ctrlcore.Ready) {
	c.step(ev, -1)
}

// step is Step whose answers wait, when answerAt is not negative, until
// this node's partitions reflect image version answerAt.
func (c *controllerService) step(ev func(*ctrlcore.Core, time.Time, *metadata.Image) ctrlcore.Ready, answerAt int64) {
	c.mu.Lock()
	rd := ev(c.core, time.Now(), c.b.Image())
	c.mu.Unlock()
	for _, n := range rd.Notes {
		c.b.log.Info(n.Msg, n.Args...)
	}
	for range rd.Fenced {
		c.b.metrics.IncLeaderElection(false)
	}
	for _, answer := range rd.AnswersAtCommit {
		answer()
	}
	if p := rd.Propose; p != nil {
		go c.propose(p)
	}
	for _, id := range rd.DescribeLogDirs {
		c.b.bgWG.Add(1)
		go c.gatherLogDirs(id)
	}
	for _, m := range rd.LogDirMoves {
		c.b.bgWG.Add(1)
		go c.moveLogDir(m)
	}
	if answerAt >= 0 && len(rd.Answers) > 0 {
		go func() {
			ctx, cancel := context.WithTimeout(c.b.stopCtx, commitTimeout)
			defer cancel()
			if err := c.b.waitReconciled(ctx, answerAt); err != nil {
				c.b.log.Debug("metadata committed; this node's partitions do not reflect it yet", "version", answerAt, "err", err)
			}
			for _, answer := range rd.Answers {
				answer()
			}
		}()
		return
	}
	for _, answer := range rd.Answers {
		answer()
	}
}

// propose commits one entry and reports back once this node has applied
// it. The core goes on to its next decision at once (it decides against
// the image alone); the answers it gives wait until this node's
// partitions reflect the entry, as before. The decision queue used to
// wait for that too, so a CreateTopics of 1,000 partitions held every
// later decision while this node created its replicas.
func (c *controllerService) propose(p *ctrlcore.Proposal) {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	err := c.b.quorum.Propose(ctx, p.Data)
	answerAt := int64(-1)
	if err != nil {
		err = quorumError(err)
	} else if p.Records != nil {
		answerAt = c.b.Image().Version()
	}
	c.step(func(core *ctrlcore.Core, now time.Time, im *metadata.Image) ctrlcore.Ready {
		return core.ProposalDone(now, im, p.ID, err)
	}, answerAt)
}

// activate runs on the quorum goroutine when this node becomes the
// controller: every broker gets a fresh session, then the loop checks
// the ones that cannot be reached at all.
func (c *controllerService) activate() {
	c.Step(func(core *ctrlcore.Core, now time.Time, im *metadata.Image) ctrlcore.Ready {
		return core.Activate(now, im)
	})
	c.poke()
}

func (c *controllerService) deactivate() {
	c.Step(func(core *ctrlcore.Core, now time.Time, _ *metadata.Image) ctrlcore.Ready {
		return core.Deactivate(now)
	})
}

func (c *controllerService) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// commit makes records decided by an admin request against the image
// durable, in the controller's queue: they are checked against the latest
// image right before they are proposed, so two concurrent decisions can
// never both pass against a stale one. It waits until this node's
// partitions reflect them.
func (b *Broker) commit(recs []metadata.Record) error {
	done := make(chan error, 1)
	b.controllerSvc.Step(func(core *ctrlcore.Core, now time.Time, im *metadata.Image) ctrlcore.Ready {
		return core.Submit(now, im, "admin request", func(*metadata.Image) ([]metadata.Record, error) { return recs, nil },
			func(err error) { done <- err })
	})
	return <-done
}

// reassign decides an AlterPartitionReassignments request in the core's
// queue and waits for its outcome (the handler is Blocking).
func (b *Broker) reassign(reqs []controller.Reassignment, allowRFChange bool) ([]error, error) {
	type outcome struct {
		errs []error
		err  error
	}
	done := make(chan outcome, 1)
	b.controllerSvc.Step(func(core *ctrlcore.Core, now time.Time, im *metadata.Image) ctrlcore.Ready {
		return core.Reassign(now, im, reqs, allowRFChange, func(errs []error, err error) { done <- outcome{errs, err} })
	})
	o := <-done
	return o.errs, o.err
}

// unregisterBroker decides an UnregisterBroker request in the core's
// queue and waits for its outcome (the handler is Blocking).
func (b *Broker) unregisterBroker(id int32) error {
	done := make(chan error, 1)
	b.controllerSvc.Step(func(core *ctrlcore.Core, now time.Time, im *metadata.Image) ctrlcore.Ready {
		return core.Unregister(now, im, id, func(err error) { done <- err })
	})
	return <-done
}

// connClosed is told when any controller-listener connection closes; if
// it carried a broker's heartbeats, that broker is fenced at once.
func (c *controllerService) connClosed(conn api.ConnID) {
	c.mu.Lock()
	gone := c.core.ConnClosed(conn)
	c.mu.Unlock()
	if gone {
		c.b.log.Info("broker session connection closed; fencing it now")
		c.poke()
	}
}

// loop fences brokers whose sessions expired and elects leaders for
// partitions that have none (and, with auto.leader.rebalance.enable,
// moves leaderships back to preferred replicas).
func (c *controllerService) loop() {
	defer c.b.bgWG.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-c.b.stop:
			return
		case <-t.C:
		case <-c.wake:
		}
		c.probeUnseen()
		c.Step(func(core *ctrlcore.Core, now time.Time, im *metadata.Image) ctrlcore.Ready { return core.Tick(now, im) })
	}
}

// probeUnseen dials the controller endpoint (a broker-only node: its
// first registered endpoint) of brokers that have not heartbeated to this
// controller yet. A refused connection means no process is listening
// there: the broker is dead and need not be waited for (its session would
// expire only after broker.session.timeout.ms).
func (c *controllerService) probeUnseen() {
	c.mu.Lock()
	unseen := c.core.Unseen(c.b.Image())
	c.mu.Unlock()
	for _, id := range unseen {
		addr, ok := c.b.probeAddr(id)
		if !ok {
			continue
		}
		d := net.Dialer{Timeout: 200 * time.Millisecond}
		if ip := c.b.cfg.OutboundBindAddress; ip != nil {
			d.LocalAddr = &net.TCPAddr{IP: ip}
		}
		nc, err := d.Dial("tcp", addr)
		if err == nil {
			nc.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			c.b.log.Info("broker's controller port refuses connections; treating it as dead", "broker", id)
			c.mu.Lock()
			c.core.Unreachable(id)
			c.mu.Unlock()
		}
	}
}

// probeAddr is where a broker's process listens: its controller endpoint
// if it is a voter, else the first endpoint it registered.
func (b *Broker) probeAddr(id int32) (string, bool) {
	if addr, ok := b.voterAddr(id); ok {
		return addr, true
	}
	br, ok := b.Image().Broker(id)
	if !ok || len(br.Endpoints) == 0 {
		return "", false
	}
	return endpointOf(br, br.Endpoints[0].Listener)
}

// voterAddr is the controller endpoint of a node.
func (b *Broker) voterAddr(id int32) (string, bool) {
	voters := b.controllerVoters()
	i := slices.IndexFunc(voters, func(v config.Voter) bool { return v.ID == id })
	if i < 0 {
		return "", false
	}
	return voters[i].Addr(), true
}
