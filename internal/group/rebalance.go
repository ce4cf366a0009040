package group

import "github.com/twmb/franz-go/pkg/kerr"

// maybePrepareRebalance starts a rebalance unless one is under way, then
// completes the join phase if everyone is already in.
func (g *Group) maybePrepareRebalance(now int64, out *Output) {
	switch g.state {
	case Empty, Stable, CompletingRebalance:
		g.prepareRebalance(now, out)
	}
	g.tryCompleteJoin(now, out)
}

func (g *Group) prepareRebalance(now int64, out *Output) {
	// The outcome of an assignment being written no longer matters.
	g.assigning = nil
	if g.state == CompletingRebalance {
		// The assignment being computed is for a generation that will never
		// be stable; members parked in SyncGroup must rejoin.
		for _, m := range g.orderedMembers() {
			m.assignment = nil
			g.answerSync(m, SyncResponse{Err: kerr.RebalanceInProgress}, out)
		}
	}
	clear(g.pendingSync)
	delay := g.coord.cfg.InitialRebalanceDelayMs
	if g.state == Empty && delay > 0 {
		// group.initial.rebalance.delay.ms: the first members of a new group
		// usually start together; waiting a little saves a rebalance each.
		g.initialDelay = true
		g.newMemberAdded = false
		g.initialRemaining = max(g.rebalanceTimeout()-delay, 0)
		g.joinDeadline = now + delay
	} else {
		g.initialDelay = false
		g.joinDeadline = now + g.rebalanceTimeout()
	}
	g.transition(PreparingRebalance, now)
}

// tryCompleteJoin ends the join phase early once every member rejoined and
// no member handed an id is still expected. The initial delay is waited
// out in full, as in Kafka.
func (g *Group) tryCompleteJoin(now int64, out *Output) {
	if g.state == PreparingRebalance && !g.initialDelay && g.allJoined() {
		g.completeJoin(now, out)
	}
}

// joinPhaseExpired runs at joinDeadline.
func (g *Group) joinPhaseExpired(now int64, out *Output) {
	if g.initialDelay && g.newMemberAdded && g.initialRemaining > 0 {
		step := min(g.coord.cfg.InitialRebalanceDelayMs, g.initialRemaining)
		g.initialRemaining -= step
		g.newMemberAdded = false
		g.joinDeadline = now + step
		return
	}
	g.completeJoin(now, out)
}

// completeJoin ends the join phase: members that did not rejoin are
// dropped (static ones stay, bound by their session), a new generation
// starts and every parked JoinGroup is answered.
func (g *Group) completeJoin(now int64, out *Output) {
	g.initialDelay = false
	for _, m := range g.orderedMembers() {
		if !m.joinWaiting && m.instanceID == "" {
			g.failParked(m, kerr.UnknownMemberID, out)
			g.remove(m.id)
		}
	}
	if !g.electJoinedLeader() && len(g.members) > 0 {
		// Only static members that did not rejoin are left: wait another
		// rebalance timeout for them to rejoin or for their sessions to end.
		g.joinDeadline = now + g.rebalanceTimeout()
		return
	}
	g.generation++
	if len(g.members) == 0 {
		g.protocolName = ""
		g.subscribed = nil
		g.transition(Empty, now)
		out.Records = append(out.Records, groupMetadataRecord(g))
		g.persisted = true
		return
	}
	g.protocolName = g.selectProtocol()
	g.computeSubscribed()
	g.transition(CompletingRebalance, now)
	members := g.joinMembers()
	for _, m := range g.orderedMembers() {
		r := JoinResponse{
			MemberID:     m.id,
			Generation:   g.generation,
			ProtocolType: g.protocolType,
			ProtocolName: g.protocolName,
			LeaderID:     g.leader,
		}
		if m.id == g.leader {
			r.Members = members
		}
		g.answerJoin(m, r, out)
		m.isNew = false
		m.lastHeartbeat = now
		g.pendingSync[m.id] = struct{}{}
	}
	g.syncDeadline = now + g.rebalanceTimeout()
}

// electJoinedLeader keeps the leader if it rejoined, else makes the first
// rejoined member leader; false if no member rejoined.
func (g *Group) electJoinedLeader() bool {
	if l := g.members[g.leader]; l != nil && l.joinWaiting {
		return true
	}
	for _, m := range g.orderedMembers() {
		if m.joinWaiting {
			g.leader = m.id
			return true
		}
	}
	return false
}

// removeMember drops a member that left, expired or was fenced, and
// rebalances the rest.
func (g *Group) removeMember(now int64, m *member, out *Output) {
	g.failParked(m, kerr.UnknownMemberID, out)
	g.remove(m.id)
	switch g.state {
	case Stable, CompletingRebalance:
		g.maybePrepareRebalance(now, out)
	case PreparingRebalance:
		g.tryCompleteJoin(now, out)
	}
}

// tick fires what is due at now: expired pending ids, expired sessions,
// the end of the join phase, and members that never sent SyncGroup.
func (g *Group) tick(now int64, out *Output) {
	for _, id := range g.sortedPending() {
		if now >= g.pending[id] {
			delete(g.pending, id)
			g.tryCompleteJoin(now, out)
		}
	}
	for _, m := range g.orderedMembers() {
		if at, ok := m.sessionDeadline(); ok && now >= at && g.members[m.id] == m {
			g.removeMember(now, m, out)
		}
	}
	if g.state == PreparingRebalance && now >= g.joinDeadline {
		g.joinPhaseExpired(now, out)
	}
	if len(g.pendingSync) > 0 && now >= g.syncDeadline && (g.state == CompletingRebalance || g.state == Stable) {
		for _, m := range g.orderedMembers() {
			if _, ok := g.pendingSync[m.id]; ok {
				g.failParked(m, kerr.UnknownMemberID, out)
				g.remove(m.id)
			}
		}
		g.maybePrepareRebalance(now, out)
	}
}
