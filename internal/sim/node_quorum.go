package sim

import (
	"fmt"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/skein-log/skein/internal/ctrlcore"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/quorum"
)

// The metadata quorum member of a process: what internal/quorum's Node
// does with a ticker goroutine and a TCP transport, done on the event
// queue, and what internal/node/metadata_quorum.go does with the
// committed entries (apply to the image, reconcile partitions).

func (p *process) tickLoop() {
	p.core.Tick()
	p.processReady()
	p.n.after(raftTick, p.tickLoop)
}

// processReady drains the Core: persist, send, apply.
func (p *process) processReady() {
	for p.core.HasReady() {
		out, err := p.core.Ready()
		if err != nil {
			// A storage error stops the Core for good: the process dies
			// and a restart recovers from disk, as in production.
			p.n.tracef("quorum failed: %v; process exits", err)
			p.n.c.processExited(p.n)
			return
		}
		p.quorumOutput(out)
		for _, m := range out.Messages {
			p.sendRaft(m)
		}
		if out.Restored != nil {
			p.n.tracef("installed metadata snapshot at index %d", out.Restored.Index)
			p.n.c.check.stats.SnapshotsInstalled++
			p.reconcile()
		}
		for _, e := range out.Committed {
			p.applyEntry(e)
		}
		if len(out.Committed) > 0 {
			p.reconcile()
			p.completeProposals(out.Committed)
		}
		if out.SoftState != nil {
			p.onLeaderChange(quorum.NodeID(out.SoftState.Lead), out.SoftState.RaftState == raft.StateLeader)
		}
		if p.n.proc != p {
			return // the process exited while applying
		}
	}
	p.stopIfResigned()
}

func (p *process) sendRaft(m *raftpb.Message) {
	data, err := proto.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("sim: marshal raft message: %v", err))
	}
	from, to := p.n, p.n.c.nodes[quorum.NodeID(m.GetTo())]
	inc := from.incarnation
	isSnap := m.GetType() == raftpb.MsgSnap
	delivered := false
	if isSnap {
		// The transport reports a snapshot it could not deliver, so the
		// leader retries it.
		from.after(rpcTimeout, func() {
			if !delivered {
				p.core.ReportSnapshot(m.GetTo(), false)
				p.processReady()
			}
		})
	}
	p.raftSent(to)
	p.n.c.net.send(from.id, to.id, func() {
		to.deliver(func() {
			var in raftpb.Message
			if err := proto.Unmarshal(data, &in); err != nil {
				panic(fmt.Sprintf("sim: unmarshal raft message: %v", err))
			}
			q := to.proc
			if err := q.core.Step(&in); err != nil {
				q.n.tracef("raft step refused: %v", err)
			}
			q.processReady()
			if isSnap && !delivered {
				delivered = true
				from.c.s.after(0, func() {
					from.runIf(inc, func() {
						p.core.ReportSnapshot(m.GetTo(), true)
						p.processReady()
					})
				})
			}
		})
	})
}

// applyEntry applies one committed entry to the image, as
// applyMetadataEntry does: an entry that does not apply is skipped alike
// everywhere.
func (p *process) applyEntry(e quorum.Entry) {
	next := p.image
	if len(e.Data) > 0 {
		recs, err := metadata.DecodeEntry(e.Data)
		if err != nil {
			p.n.c.violation("undecodable metadata entry %d on %s: %v", e.Index, p.n, err)
			return
		}
		if len(recs) > 0 {
			if next, err = p.image.Apply(recs...); err != nil {
				p.n.c.violation("metadata entry %d does not apply on %s: %v", e.Index, p.n, err)
				next = p.image
			}
		}
	}
	p.setImage(next.WithVersion(int64(e.Index)), "")
}

// setImage installs a new image after checking it against the previous
// one: leader epochs only grow.
func (p *process) setImage(next *metadata.Image, why string) {
	p.n.c.checkImage(p.n, p.image, next)
	p.fenceTimes.Observe(p.image, next, p.n.c.nowMs())
	p.image = next
	if why != "" {
		p.n.tracef("image replaced from %s (version %d)", why, next.Version())
	}
	if p.sess.Observe(next) {
		p.brokerEpoch = p.sess.Epoch()
		p.n.tracef("registered, broker epoch %d", p.brokerEpoch)
		// The process vouches for the new epoch (Broker.sessionStep
		// records it in the shutdown state file).
		p.n.stateEpoch, p.n.stateBoot = p.brokerEpoch, p.n.boot
	}
}

// onLeaderChange mirrors onControllerChange: the quorum leader is the
// active controller.
func (p *process) onLeaderChange(leader int32, self bool) {
	if leader == p.controller && self == p.ctl.Active() {
		return
	}
	p.controller = leader
	if leader >= 0 {
		// As onControllerChange: ISR proposals waiting out a resend
		// backoff go to the new controller at once.
		for _, r := range p.partitionList() {
			r.ready(r.core.ControllerChanged())
		}
	}
	if self {
		p.n.tracef("became the active controller (term %d)", p.core.Term())
		p.inflight = nil
		p.Step(func(c *ctrlcore.Core, now time.Time, im *metadata.Image) ctrlcore.Ready { return c.Activate(now, im) })
	} else if p.ctl.Active() {
		p.n.tracef("no longer the active controller")
		p.inflight = nil
		p.Step(func(c *ctrlcore.Core, now time.Time, _ *metadata.Image) ctrlcore.Ready { return c.Deactivate(now) })
	}
}
