package sim

import (
	"bytes"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/balancer"
	"github.com/skein-log/skein/internal/ctrlcore"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/quorum"
)

// The active controller's runtime: the same ctrlcore.Core that
// internal/node's controllerService drives (sessions, fencing, the
// decision queue), here on the event queue. Its answers reach the real
// controller handlers of internal/api through ctrlcore.Backend.

// commitTimeout bounds a proposal's wait for its entry to commit.
const commitTimeout = 5 * time.Second

// proposal is the controller's entry in flight: the core proposes one at
// a time, so it is the only one completeProposals looks for.
type proposal struct {
	id   uint64
	term uint64
	data []byte
}

// wallNow is the simulated time as a wall clock, for the controller core.
func (c *Cluster) wallNow() time.Time { return time.UnixMilli(simEpochMs).Add(c.s.now) }

// Step runs one event on the controller core and carries out what it
// returns (ctrlcore.Runtime).
func (p *process) Step(ev func(*ctrlcore.Core, time.Time, *metadata.Image) ctrlcore.Ready) {
	rd := ev(p.ctl, p.n.c.wallNow(), p.image)
	for _, m := range rd.BalancerMoves {
		p.checkBalancerMove(m)
	}
	for _, r := range rd.BalancerRefused {
		// The balancer plans on the image the controller's check reads
		// (replica capacities included): a move it plans is one the check
		// accepts, or it would plan the same refused move every round and
		// never the one that would be accepted.
		p.n.c.check.stats.BalancerRefusals++
		p.n.c.violation("%s: the controller refused the balancer's move %v: %v", p.n, r.Move, r.Err)
	}
	if len(rd.DescribeLogDirs) > 0 {
		p.reportedDisks = map[int32]*balancer.Disk{} // a new round
	}
	for _, n := range rd.Notes {
		p.n.tracef("controller: %s %v", n.Msg, n.Args)
	}
	for _, answer := range rd.AnswersAtCommit {
		answer()
	}
	for _, answer := range rd.Answers {
		answer()
	}
	if rd.Propose != nil {
		p.propose(rd.Propose)
	}
	for _, id := range rd.DescribeLogDirs {
		p.gatherLogDirs(id)
	}
	for _, m := range rd.LogDirMoves {
		// As node's controllerService: AlterReplicaLogDirs to the broker,
		// over the network also for this node's own (the simulated
		// network delivers a node's call to itself).
		p.n.c.check.stats.BalancerDirMoves++
		p.n.c.sendAlterLogDirFrom(p.n.id, "balancer", m, nil)
	}
}

// checkBalancerMove counts a move the balancer decided and checks it
// against what the brokers answered in the round it was decided on (the
// rounds do not overlap: the next starts an interval after the balance
// that ends one): a destination that answered no disk while others did,
// or whose answer leaves no room for the partition under
// replica.balance.max.disk.usage.percent, is a violation, whatever the
// core made of the answers.
func (p *process) checkBalancerMove(m balancer.Move) {
	st := &p.n.c.check.stats
	st.BalancerMoves++
	switch m.Reason {
	case balancer.DiskImbalance:
		st.BalancerDiskMoves++
	case balancer.OverCapacity:
		st.BalancerDrains++
	}
	if len(p.reportedDisks) == 0 {
		return // no answers with disks: counts alone decided
	}
	anyDisk := false
	for _, d := range p.reportedDisks {
		anyDisk = anyDisk || d != nil
	}
	d := p.reportedDisks[m.To]
	switch {
	case !anyDisk:
	case d == nil:
		p.n.c.violation("balancer moved %v onto node %d, which reported no disk this round", m, m.To)
	case float64(d.Total-d.Usable+m.Bytes) > float64(d.Total)*float64(p.cfg.ReplicaBalanceMaxDiskUsagePct)/100:
		p.n.c.violation("balancer moved %v onto node %d, whose disk (%d of %d bytes used) has no room for it", m, m.To, d.Total-d.Usable, d.Total)
	}
}

// gatherLogDirs asks broker id for its log directories over the
// simulated network, as node's controllerService does over TCP, and
// reports the answer (or the timeout) to the core.
func (p *process) gatherLogDirs(id int32) {
	p.n.c.call(p.n.id, id, ctrlcore.LogDirsRequest(), time.Second, func(resp kmsg.Response, err error) {
		if p.n.proc != p {
			return // this process has crashed since
		}
		var r *balancer.Report
		if err == nil {
			rep := ctrlcore.ReportOf(resp.(*kmsg.DescribeLogDirsResponse))
			r = &rep
			if p.reportedDisks != nil {
				p.reportedDisks[id] = rep.Disk
			}
		}
		p.Step(func(c *ctrlcore.Core, now time.Time, _ *metadata.Image) ctrlcore.Ready {
			return c.LogDirsReported(now, id, r)
		})
	})
}

func (p *process) propose(prop *ctrlcore.Proposal) {
	if prop.Records != nil {
		p.n.tracef("controller commits %s: %s", prop.What, describeRecords(prop.Records))
	}
	id := prop.ID
	if err := p.core.Propose(prop.Data); err != nil {
		p.Step(func(c *ctrlcore.Core, now time.Time, im *metadata.Image) ctrlcore.Ready {
			return c.ProposalDone(now, im, id, fmt.Errorf("%w: %v", kerr.NotController, err))
		})
		return
	}
	p.inflight = &proposal{id: id, term: p.core.Term(), data: prop.Data}
	p.n.after(commitTimeout, func() {
		if p.inflight == nil || p.inflight.id != id {
			return
		}
		// Never committed in time (lost leadership without noticing yet):
		// the outcome is unknown, and the next decision waits for a
		// barrier.
		p.inflight = nil
		p.n.tracef("controller proposal did not commit in %v", commitTimeout)
		p.Step(func(c *ctrlcore.Core, now time.Time, im *metadata.Image) ctrlcore.Ready {
			return c.ProposalDone(now, im, id, fmt.Errorf("%w: metadata quorum did not commit in time", kerr.RequestTimedOut))
		})
	})
	p.processReady()
}

// completeProposals answers the controller's proposal once its entry came
// out committed (and applied). Proposals of one term commit in the order
// they were made, so the one in flight is the only candidate.
func (p *process) completeProposals(entries []quorum.Entry) {
	for _, e := range entries {
		f := p.inflight
		if f == nil {
			return
		}
		if e.Term == f.term && bytes.Equal(f.data, e.Data) {
			p.inflight = nil
			p.Step(func(c *ctrlcore.Core, now time.Time, im *metadata.Image) ctrlcore.Ready {
				return c.ProposalDone(now, im, f.id, nil)
			})
		}
	}
}

// controllerLoop ticks the core (session expiry, elections), as
// controllerService.loop does without the socket probes: the simulation
// has no connections to watch.
func (p *process) controllerLoop() {
	p.n.after(controllerPeriod, p.controllerLoop)
	p.Step(func(c *ctrlcore.Core, now time.Time, im *metadata.Image) ctrlcore.Ready { return c.Tick(now, im) })
}

// decide queues a controller decision (the harness's topic creation).
func (p *process) decide(what string, fn func(*metadata.Image) ([]metadata.Record, error), done func(error)) {
	p.Step(func(c *ctrlcore.Core, now time.Time, im *metadata.Image) ctrlcore.Ready {
		return c.Submit(now, im, what, fn, done)
	})
}

// pidBlock is small so that runs ask for new blocks often.
const pidBlock = 8

func shortID(id metadata.TopicID) string { return id.String()[:4] }

func describeRecords(recs []metadata.Record) string {
	s := ""
	for i, r := range recs {
		if i > 0 {
			s += "; "
		}
		switch r := r.(type) {
		case metadata.PartitionChange:
			s += fmt.Sprintf("%s-%d", shortID(r.TopicID), r.Partition)
			if r.Leader != nil {
				s += fmt.Sprintf(" leader=%d", *r.Leader)
			}
			if r.ISR != nil {
				s += fmt.Sprintf(" isr=%v", *r.ISR)
			}
			if r.ELR != nil {
				s += fmt.Sprintf(" elr=%v", *r.ELR)
			}
			if r.Replicas != nil {
				s += fmt.Sprintf(" replicas=%v", *r.Replicas)
			}
			if r.AddingReplicas != nil {
				s += fmt.Sprintf(" adding=%v", *r.AddingReplicas)
			}
			if r.RemovingReplicas != nil {
				s += fmt.Sprintf(" removing=%v", *r.RemovingReplicas)
			}
		case metadata.SetTopicConfig:
			// Spelled out: Value is a pointer, and %+v would print its
			// address, which differs between runs of one seed.
			v := "<deleted>"
			if r.Value != nil {
				v = *r.Value
			}
			s += fmt.Sprintf("config %s %s=%s", shortID(r.TopicID), r.Key, v)
		case metadata.ConfigRecord:
			// Spelled out too, for the same reason.
			v := "<deleted>"
			if r.Value != nil {
				v = *r.Value
			}
			s += fmt.Sprintf("broker config %q %s=%s", r.ResourceName, r.Name, v)
		default:
			s += fmt.Sprintf("%T%+v", r, r)
		}
	}
	return s
}
