package sim

import (
	"github.com/skein-log/skein/internal/ctrlcore"
	"github.com/skein-log/skein/internal/quorum"
)

// A clean stop, as far as the metadata quorum goes: what quorum.Node.Stop
// does, on the event queue. A leader hands its leadership over first
// (Core.Resign) and the process runs on, its port open, until the handover
// is over (Core.Resigned: a successor is known, Raft gave the transfer up,
// or an election timeout passed); then it exits as a killed process does
// (its logs are not closed cleanly: the broker's own controlled shutdown
// and clean close are not modelled, see node_partition.go). A process that
// does not lead exits at once.

// stop stops n's process cleanly; exited runs once it is gone.
func (n *node) stop(exited func()) {
	p := n.proc
	var stopping []uint64
	for _, id := range ctrlcore.StoppingNodes(p.image) {
		stopping = append(stopping, quorum.RaftID(id))
	}
	to := p.core.Resign(stopping...)
	if to == 0 {
		n.exit()
		exited()
		return
	}
	n.tracef("stopping: handing the quorum leadership over to n%d (term %d)", quorum.NodeID(to), p.core.Term())
	p.stopping = exited
	p.processReady() // sends MsgTimeoutNow (or the entries first), then stopIfResigned
}

// stopIfResigned ends a clean stop once its handover is over.
func (p *process) stopIfResigned() {
	if p.stopping == nil || p.n.proc != p || !p.core.Resigned() {
		return
	}
	exited := p.stopping
	p.stopping = nil
	if leader := p.core.Leader(); leader != 0 && !p.core.IsLeader() {
		p.n.c.check.stats.Handovers++
		p.n.tracef("quorum leadership handed over to n%d (term %d); exiting", quorum.NodeID(leader), p.core.Term())
	} else {
		p.n.tracef("quorum handover given up; exiting")
	}
	p.n.exit()
	exited()
}
