package group

import "github.com/twmb/franz-go/pkg/kerr"

func (g *Group) syncGroup(now int64, req SyncRequest, out *Output) {
	fail := func(err error) { out.sync(req.ID, SyncResponse{Err: err}) }
	if err := g.validateMember(req.InstanceID, req.MemberID); err != nil {
		fail(err)
		return
	}
	switch {
	case req.Generation != g.generation:
		fail(kerr.IllegalGeneration)
		return
	case req.ProtocolType != "" && req.ProtocolType != g.protocolType,
		req.ProtocolName != "" && req.ProtocolName != g.protocolName:
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case PreparingRebalance:
		fail(kerr.RebalanceInProgress)
	case CompletingRebalance:
		m.lastHeartbeat = now
		delete(g.pendingSync, m.id)
		g.parkSync(m, req.ID, out)
		if m.id == g.leader {
			g.completeAssignment(now, req.Assignments, out)
		}
	case Stable:
		m.lastHeartbeat = now
		delete(g.pendingSync, m.id)
		out.sync(req.ID, g.syncResponse(m))
	default:
		fail(kerr.UnknownMemberID)
	}
}

// completeAssignment takes the leader's assignment: members it left out get
// an empty one, ids it invented are ignored. The group is stable once the
// assignment is persisted, which Output's ordering guarantees.
func (g *Group) completeAssignment(now int64, as []Assignment, out *Output) {
	given := make(map[string][]byte, len(as))
	for _, a := range as {
		given[a.MemberID] = a.Assignment
	}
	for _, m := range g.members {
		m.assignment = given[m.id]
	}
	g.transition(Stable, now)
	out.Records = append(out.Records, groupMetadataRecord(g))
	g.persisted = true
	for _, m := range g.orderedMembers() {
		g.answerSync(m, g.syncResponse(m), out)
	}
}

func (g *Group) syncResponse(m *member) SyncResponse {
	return SyncResponse{ProtocolType: g.protocolType, ProtocolName: g.protocolName, Assignment: m.assignment}
}

func (g *Group) heartbeat(now int64, req HeartbeatRequest) error {
	if err := g.validateMember(req.InstanceID, req.MemberID); err != nil {
		return err
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration
	}
	m := g.members[req.MemberID]
	switch g.state {
	case PreparingRebalance:
		m.lastHeartbeat = now
		return kerr.RebalanceInProgress
	case CompletingRebalance, Stable:
		m.lastHeartbeat = now
		return nil
	default:
		return kerr.UnknownMemberID
	}
}

func (g *Group) leave(now int64, lm LeavingMember, out *Output) error {
	if lm.InstanceID != "" {
		id, ok := g.static[lm.InstanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID
		case lm.MemberID != "" && lm.MemberID != id:
			return kerr.FencedInstanceID
		}
		g.removeMember(now, g.members[id], out)
		return nil
	}
	if _, ok := g.pending[lm.MemberID]; ok {
		delete(g.pending, lm.MemberID)
		g.tryCompleteJoin(now, out)
		return nil
	}
	m := g.members[lm.MemberID]
	if m == nil {
		return kerr.UnknownMemberID
	}
	g.removeMember(now, m, out)
	return nil
}
