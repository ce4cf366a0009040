package quorum

import (
	"cmp"
	"slices"
)

// The leader's resignation on a clean stop. A leader that simply stops
// leaves the others to notice: at best its port refuses and they replace it
// at once (PeerDown), but a process that stops its quorum while its
// listener still accepts connections (a broker finishing its own clean
// stop) looks alive, and its followers wait out an election timeout. Kafka's
// KRaft leader resigns instead (KIP-595: on shutdown it sends
// EndQuorumEpoch, and the voters elect at once); Raft's equivalent is the
// leadership transfer (section 3.10 of the Raft thesis, etcd raft's
// MsgTransferLeader): the leader brings one voter up to date and tells it
// to campaign now (MsgTimeoutNow), and that campaign skips the pre-vote and
// the other voters' leader lease. What to hand over to, and when the
// handover is over, is decided here, so that node and simulator run the
// same rule.

// resignation is a handover this leader started (Resign).
type resignation struct {
	to       uint64   // the voter asked to take over
	ticks    int      // ticks since Resign
	stopping []uint64 // Resign's, for a new choice (successorGone)
	over     bool     // no voter is left to hand over to
}

// Resign hands this leader's leadership over before its process stops: to
// the successor (see successor), with etcd raft's leadership transfer.
// stopping are the raft ids of peers whose processes the caller knows to
// be stopping too (a broker in its controlled shutdown: see
// ctrlcore.StoppingNodes); none of them is chosen, since a successor that
// stops before its election is won hands nothing on and the wait is lost. It
// returns the successor's raft id, or 0 when there is nothing to hand over
// (this node is not the leader, or no other voter could take over); then
// Resigned is true at once. The caller keeps ticking, stepping and calling
// Ready until Resigned, and then stops. Proposals made meanwhile are
// dropped (Raft refuses them during a transfer; ErrProposalDropped at the
// Node).
func (c *Core) Resign(stopping ...uint64) uint64 {
	if c.resign != nil {
		return c.resign.to
	}
	if c.failed != nil || !c.IsLeader() {
		return 0
	}
	to := c.successor(stopping)
	if to == 0 {
		return 0
	}
	c.resign = &resignation{to: to, stopping: stopping}
	c.logger.Info("handing the quorum leadership over before stopping", "to", NodeID(to), "term", c.Term())
	c.rn.TransferLeader(to)
	return to
}

// Resigned reports whether the handover Resign started is over: another
// leader is known, Raft gave the transfer up (the successor did not catch
// up within an election timeout), or an election timeout has passed since
// Resign (a leader that stepped down but has not heard from its
// successor). It is true too when there was nothing to hand over, or
// Resign was never called.
func (c *Core) Resigned() bool {
	r := c.resign
	if r == nil || r.over {
		return true
	}
	switch {
	case !c.IsLeader() && c.Leader() != 0:
		return true // someone else leads
	case c.IsLeader() && c.rn.BasicStatus().LeadTransferee == 0:
		return true // the transfer was given up
	}
	return r.ticks >= c.cfg.ElectionTicks
}

// successorGone: the successor's process was reported gone (PeerDown)
// while this leader hands over to it, so it will never campaign. The
// handover goes to the next successor, within the same election timeout,
// or is over if there is none.
func (c *Core) successorGone(id uint64) {
	r := c.resign
	if r == nil || r.over || id != r.to || !c.IsLeader() {
		return
	}
	next := c.successor(r.stopping)
	if next == 0 {
		r.over = true
		c.logger.Info("the quorum leadership's successor is gone; no other voter to hand over to", "successor", NodeID(id))
		return
	}
	c.logger.Info("the quorum leadership's successor is gone; handing over to another", "successor", NodeID(id), "to", NodeID(next))
	r.to = next
	c.rn.TransferLeader(next) // aborts the transfer to id
}

// resignTick counts the ticks of a handover under way.
func (c *Core) resignTick() {
	if c.resign != nil {
		c.resign.ticks++
	}
}

// successor is the voter a resigning leader hands over to: among the
// current voters other than itself, one whose process has not been
// reported gone (PeerDown, which the transport reports for any peer) and
// is not among stopping (the caller's knowledge), that
// was heard from within the last election timeout (Raft's RecentActive,
// which CheckQuorum keeps), that holds the most of the log (the highest
// match index, so the transfer needs the fewest entries sent first), the
// lowest id among equals (every run picks the same). A voter reported gone
// is never chosen: it could not campaign. 0 if no voter qualifies.
func (c *Core) successor(stopping []uint64) uint64 {
	st := c.Status()
	type candidate struct {
		id     uint64
		active bool
		match  uint64
	}
	var cands []candidate
	for _, id := range c.confState.GetVoters() {
		if id == c.cfg.ID || c.gone[id] || slices.Contains(stopping, id) {
			continue
		}
		pr, ok := st.Progress[id]
		if !ok || pr.IsLearner {
			continue
		}
		cands = append(cands, candidate{id: id, active: pr.RecentActive, match: pr.Match})
	}
	if len(cands) == 0 {
		return 0
	}
	best := slices.MinFunc(cands, func(a, b candidate) int {
		if a.active != b.active {
			if a.active {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(b.match, a.match), cmp.Compare(a.id, b.id))
	})
	return best.id
}

// noteGone records that peer id's process is gone (PeerDown), until a
// message from it arrives (noteAlive).
func (c *Core) noteGone(id uint64) {
	if c.gone == nil {
		c.gone = map[uint64]bool{}
	}
	c.gone[id] = true
}

// noteAlive forgets that id was reported gone: it sent a message.
func (c *Core) noteAlive(id uint64) { delete(c.gone, id) }
