package sim

import (
	"time"

	"github.com/skein-log/skein/internal/quorum"
)

// The Raft transport's connections, as far as they tell a process that a
// peer's process is gone: what quorum.TCPTransport learns from its
// outbound connections (watch, probeDown, downAgain in transport.go) and
// reports to its Node (Reporter.ReportDown, which calls Core.PeerDown).
// Messages themselves still cross the network as before (sendRaft); only
// the signal is modelled here:
//
//   - A process that dies while its machine stays up (kill -9, a crash, an
//     operator's restart) has its sockets closed by the kernel: each peer
//     with a Raft connection open to it sees that connection end one
//     network delay later (watch), unless the link is cut.
//   - The peer then probes the dead process's port, up to downProbes
//     times: a refused connection (its machine is up, nothing listens)
//     reports it down; a connection that is accepted (it restarted; a
//     paused process's kernel accepts too) or unanswered (a cut link, a
//     machine without power) is tried again downProbeGap later, or after
//     raftDialTimeout.
//   - A message to a peer with no open connection dials it; a refused
//     dial reports it down again (downAgain): a heartbeat the dead leader
//     sent just before dying can make a follower that forgot it follow it
//     again, and only its answer's refused dial then says it is gone.
//   - A message written on a connection to a process that is gone (its
//     close not seen yet: still on its way or lost to a cut) is answered
//     with a reset by the peer's machine, which ends the connection as a
//     close does.
//
// A machine that lost power closes nothing and answers nothing, so its
// peers learn nothing until their election timeout, as in production.
// Not modelled: a close segment lost to a cut is never retransmitted (TCP
// would retransmit it once the link heals; here only a later write's
// reset ends such a connection), a connection is counted open whatever
// the links (a dial over a cut link would time out), and the controller
// port a dynamic quorum's node moves to on restart (the simulated
// transport sends by node id, so the old port never refuses).

// Timing of the probes: quorum's downProbes and downProbeGap, and the
// TCP transport's default dial timeout, as node runs them (raftTick is
// node's quorum tick too).
const (
	downProbes      = 3
	downProbeGap    = 20 * time.Millisecond
	raftDialTimeout = time.Second
)

// raftLink is a process's outbound Raft connection to one peer.
type raftLink struct {
	// conn is the incarnation of the peer's process the connection is
	// open to, 0 if none.
	conn uint64
	// dialing: a dial to the peer is under way (the transport dials one
	// peer at a time), for downAgain.
	dialing bool
}

// dialOutcome is how a TCP connection attempt ended.
type dialOutcome int

const (
	dialAccepted dialOutcome = iota
	dialRefused
	dialTimedOut
)

// signal carries a TCP control segment (a close or a reset, a connection
// attempt or its answer) after a latency like a message's, unless the
// link is cut when it is sent or when it would arrive. TCP retransmits
// such segments, so the lossy network's drops, duplicates and slow paths
// do not apply to them.
func (n *network) signal(from, to int32, arrive func()) {
	if n.isCut(from, to) {
		return
	}
	n.s.after(n.s.between(n.cfg.MinDelay, n.cfg.MaxDelay), func() {
		if !n.isCut(from, to) {
			arrive()
		}
	})
}

// dial models a TCP connect from's process makes to to: the attempt
// crosses from→to, and to's machine accepts it (its process listens, even
// paused), refuses it (no process) or, without power, says nothing; the
// answer crosses back. done runs on from's incarnation with the outcome,
// dialTimedOut after raftDialTimeout without an answer.
func (c *Cluster) dial(from, to *node, done func(dialOutcome)) {
	answered := false
	finish := func(o dialOutcome) {
		if !answered {
			answered = true
			done(o)
		}
	}
	from.after(raftDialTimeout, func() { finish(dialTimedOut) })
	inc := from.incarnation
	c.net.signal(from.id, to.id, func() {
		if to.poweredOff {
			return
		}
		o := dialAccepted
		if !to.up {
			o = dialRefused
		}
		c.net.signal(to.id, from.id, func() { from.runIf(inc, func() { finish(o) }) })
	})
}

// closeSockets is n's process dying with its machine up: every peer whose
// Raft connection is open to it sees that connection end (watch).
func (c *Cluster) closeSockets(n *node, inc uint64) {
	for _, id := range c.ids {
		m := c.nodes[id]
		if m == n || !m.up || m.proc.raftLinks[n.id].conn != inc {
			continue
		}
		p, minc := m.proc, m.incarnation
		c.net.signal(n.id, m.id, func() { m.runIf(minc, func() { p.raftConnEnded(n, inc) }) })
	}
}

// raftSent is sendRaft's connection to q, as quorum's peer.run finds it:
// the open one, a dial, or a write on a dead connection.
func (p *process) raftSent(q *node) {
	l := p.raftLinks[q.id]
	switch {
	case l.conn != 0 && q.up && l.conn == q.incarnation:
		return // the connection is open
	case l.conn != 0:
		// Written on a connection to a process that is gone: the
		// peer's machine, if it has power, answers with a reset.
		c, conn, inc := p.n.c, l.conn, p.n.incarnation
		c.net.signal(p.n.id, q.id, func() {
			if !q.poweredOff {
				c.net.signal(q.id, p.n.id, func() { p.n.runIf(inc, func() { p.raftConnEnded(q, conn) }) })
			}
		})
	case q.up:
		l.conn = q.incarnation
		p.raftLinks[q.id] = l
	case !l.dialing:
		l.dialing = true
		p.raftLinks[q.id] = l
		p.n.c.dial(p.n, q, func(o dialOutcome) {
			l := p.raftLinks[q.id]
			l.dialing = false
			p.raftLinks[q.id] = l
			if o == dialRefused {
				p.peerDown(q, "a dial to it was refused")
			}
		})
	}
}

// raftConnEnded: the connection to q's process incarnation inc ended (a
// close or a reset); the next message dials afresh, and q's port is
// probed (probeDown).
func (p *process) raftConnEnded(q *node, inc uint64) {
	l := p.raftLinks[q.id]
	if l.conn != inc {
		return // ended already, or replaced
	}
	l.conn = 0
	p.raftLinks[q.id] = l
	p.probeDown(q, 0)
}

// probeDown dials q until its port refuses (q is down) or downProbes
// attempts have not been refused.
func (p *process) probeDown(q *node, try int) {
	p.n.c.dial(p.n, q, func(o dialOutcome) {
		switch {
		case o == dialRefused:
			p.peerDown(q, "its connection closed and its port refuses connections")
		case try+1 < downProbes:
			p.n.after(downProbeGap, func() { p.probeDown(q, try+1) })
		}
	})
}

// peerDown is Node.report's down case: the Core decides. Only a report
// that makes it forget its leader is traced.
func (p *process) peerDown(q *node, why string) {
	id := quorum.RaftID(q.id)
	followed := !p.core.IsLeader() && p.core.Leader() == id
	if err := p.core.PeerDown(id); err != nil {
		p.n.tracef("%v", err)
	} else if followed && p.core.Leader() == 0 {
		p.n.c.check.stats.DeadLeadersForgotten++
		p.n.tracef("the quorum leader %s is down (%s): forgot it", q, why)
	}
	p.processReady()
}
