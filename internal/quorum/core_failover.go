package quorum

import "fmt"

// The dead leader's replacement. Raft alone replaces a dead leader only
// after an election timeout (ElectionTicks to twice that), which every
// client waiting for a new partition leader then waits out as well. The
// runtime often knows sooner that the leader's process is gone (Node: its
// transport saw the connection close and the port refuse; the simulator:
// the same, on its simulated network) and says so with PeerDown; the rest
// is decided here, so that node and simulator run the same rule.

// campaignRetryTicks is how long a campaign after the leader's death
// waits for an answer before it is started again: a few heartbeats, so
// that the other survivors have heard of the death meanwhile.
const campaignRetryTicks = 5

// PeerDown tells the Core that peer id's process is gone (it will send
// nothing until it restarts). If id is the leader this follower knows of,
// the follower forgets it (ForgetLeader), so that it grants pre-votes at
// once, and the follower with the lowest id among the other voters
// campaigns at the next Tick: one campaigner, so that the survivors do not
// split the vote, and a tick later, so that the others have heard of the
// death and forgotten the leader too (they saw the same connection close).
// It campaigns again every campaignRetryTicks while no leader is known
// (see campaignTick). Only a voter campaigns: a learner (an observer, or a
// voter removed from the quorum) is never the lowest voter. A report about
// any other peer, or on the leader itself, changes nothing but the choice
// of a resigning leader's successor (see successor).
func (c *Core) PeerDown(id uint64) error {
	c.noteGone(id) // never the successor of a resigning leader
	c.successorGone(id)
	if c.IsLeader() || c.Leader() != id {
		return nil
	}
	if err := c.ForgetLeader(); err != nil {
		return fmt.Errorf("quorum: forget the dead leader %d: %w", NodeID(id), err)
	}
	c.campaignDue, c.campaignWait = c.lowestOtherVoter(id) == c.cfg.ID, 0
	c.logger.Info("the quorum leader's process is gone; forgot it", "leader", NodeID(id), "campaigning", c.campaignDue)
	return nil
}

// lowestOtherVoter is the lowest id among the current voters (KIP-853 may
// change them) but id, 0 if none.
func (c *Core) lowestOtherVoter(id uint64) uint64 {
	lowest := uint64(0)
	for _, v := range c.confState.GetVoters() {
		if v != id && (lowest == 0 || v < lowest) {
			lowest = v
		}
	}
	return lowest
}

// campaignTick starts the election PeerDown asked for, unless a leader is
// known again by now (or this node stopped being a voter meanwhile), and
// starts it again every campaignRetryTicks while none is: a survivor that
// had not yet heard of the death when the pre-vote reached it ignored it
// (with CheckQuorum a follower ignores pre-votes while its leader's lease
// lasts) and sends no answer, so the campaign would otherwise wait out
// this node's election timeout. A vote under way (candidate) is left to
// finish: campaigning again would only raise the term.
func (c *Core) campaignTick() {
	if !c.campaignDue {
		return
	}
	if c.Leader() != 0 || c.IsLeader() || !c.isVoter(c.cfg.ID) {
		c.campaignDue = false
		return
	}
	if c.campaignWait > 0 {
		c.campaignWait--
		return
	}
	c.campaignWait = campaignRetryTicks - 1 // the ticks between two tries
	if c.IsCandidate() {
		return
	}
	if err := c.Campaign(); err != nil {
		c.logger.Warn("campaign after the leader's death failed", "err", err)
	}
}
