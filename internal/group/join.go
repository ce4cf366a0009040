package group

import "github.com/twmb/franz-go/pkg/kerr"

// join handles a JoinGroup for an existing group (created empty by the
// coordinator if needed).
func (g *Group) join(now int64, req JoinRequest, out *Output) {
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		out.joinError(req.ID, req.MemberID, kerr.InconsistentGroupProtocol)
		return
	}
	if req.MemberID == "" {
		g.joinNewMember(now, req, out)
		return
	}
	g.joinKnownMember(now, req, out)
}

func (g *Group) joinNewMember(now int64, req JoinRequest, out *Output) {
	if req.InstanceID != "" {
		if oldID, ok := g.static[req.InstanceID]; ok {
			g.replaceStaticMember(now, g.members[oldID], req, out)
			return
		}
	}
	if g.full() {
		out.joinError(req.ID, "", kerr.GroupMaxSizeReached)
		return
	}
	if req.InstanceID != "" {
		// Static members skip MEMBER_ID_REQUIRED: the instance id already
		// identifies them across restarts (KIP-345).
		g.addMemberAndRebalance(now, g.coord.newMemberID(g, req.InstanceID), req, out)
		return
	}
	id := g.coord.newMemberID(g, req.ClientID)
	if req.RequireKnownMemberID {
		// KIP-394: hand out the id first, so a client that times out and
		// retries rejoins as the same member instead of piling up new ones.
		g.pending[id] = now + int64(req.SessionTimeoutMs)
		out.join(req.ID, JoinResponse{Err: kerr.MemberIDRequired, MemberID: id, Generation: -1})
		return
	}
	g.addMemberAndRebalance(now, id, req, out)
}

func (g *Group) joinKnownMember(now int64, req JoinRequest, out *Output) {
	if _, ok := g.pending[req.MemberID]; ok {
		if req.InstanceID != "" {
			// Ids handed out with MEMBER_ID_REQUIRED are for dynamic members.
			out.joinError(req.ID, req.MemberID, kerr.InvalidRequest)
			return
		}
		delete(g.pending, req.MemberID)
		g.addMemberAndRebalance(now, req.MemberID, req, out)
		return
	}
	if err := g.validateMember(req.InstanceID, req.MemberID); err != nil {
		out.joinError(req.ID, req.MemberID, err)
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case PreparingRebalance:
		g.updateMemberAndRebalance(now, m, req, out)
	case CompletingRebalance:
		if m.sameProtocols(req.Protocols) {
			// The member lost our answer and asks again: repeat it.
			m.lastHeartbeat = now
			out.join(req.ID, g.currentJoinResponse(m, m.id == g.leader))
			return
		}
		g.updateMemberAndRebalance(now, m, req, out)
	case Stable:
		if m.id != g.leader && m.sameProtocols(req.Protocols) {
			m.lastHeartbeat = now
			out.join(req.ID, g.currentJoinResponse(m, false))
			return
		}
		// The leader rejoining (e.g. it saw metadata change) or changed
		// metadata means a new assignment is needed.
		g.updateMemberAndRebalance(now, m, req, out)
	default:
		out.joinError(req.ID, req.MemberID, kerr.UnknownMemberID)
	}
}

func (g *Group) currentJoinResponse(m *member, withMembers bool) JoinResponse {
	r := JoinResponse{
		MemberID:     m.id,
		Generation:   g.generation,
		ProtocolType: g.protocolType,
		ProtocolName: g.protocolName,
		LeaderID:     g.leader,
	}
	if withMembers {
		r.Members = g.joinMembers()
	}
	return r
}

func (g *Group) addMemberAndRebalance(now int64, id string, req JoinRequest, out *Output) {
	m := newMember(id, now, req)
	if g.state == PreparingRebalance && g.initialDelay {
		g.newMemberAdded = true
	}
	g.add(m, req.ProtocolType)
	g.parkJoin(m, req.ID, out)
	g.maybePrepareRebalance(now, out)
}

func (g *Group) updateMemberAndRebalance(now int64, m *member, req JoinRequest, out *Output) {
	g.setProtocols(m, req, now)
	g.parkJoin(m, req.ID, out)
	g.maybePrepareRebalance(now, out)
}

// replaceStaticMember handles a known group.instance.id joining without a
// member id: a restarted static member. It takes over the old member's
// place under a new id; the old id is fenced.
func (g *Group) replaceStaticMember(now int64, m *member, req JoinRequest, out *Output) {
	oldID, previousLeader := m.id, g.leader
	g.failParked(m, kerr.FencedInstanceID, out)

	newID := g.coord.newMemberID(g, req.InstanceID)
	delete(g.members, oldID)
	m.id = newID
	g.members[newID] = m
	g.static[m.instanceID] = newID
	if g.leader == oldID {
		g.leader = newID
	}
	if _, ok := g.pendingSync[oldID]; ok {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = struct{}{}
	}
	g.setProtocols(m, req, now)

	switch g.state {
	case Stable:
		if g.selectProtocol() != g.protocolName {
			g.parkJoin(m, req.ID, out)
			g.maybePrepareRebalance(now, out)
			return
		}
		// Same protocol: keep the assignment, no rebalance. Persist the new
		// id so a coordinator failover does not resurrect the fenced one.
		out.Records = append(out.Records, groupMetadataRecord(g))
		g.persisted = true
		r := g.currentJoinResponse(m, false)
		r.LeaderID = previousLeader
		if m.id == g.leader && req.SupportsSkipAssignment {
			// KIP-814: the leader learns it leads (to watch metadata) but
			// must not reassign. Older clients are told the old id leads,
			// so they act as followers and keep their assignment.
			r.LeaderID = m.id
			r.Members = g.joinMembers()
			r.SkipAssignment = true
		}
		out.join(req.ID, r)
	case CompletingRebalance:
		// The leader may be assigning to the old id: start over.
		g.parkJoin(m, req.ID, out)
		g.prepareRebalance(now, out)
		g.tryCompleteJoin(now, out)
	default: // PreparingRebalance
		g.parkJoin(m, req.ID, out)
		g.tryCompleteJoin(now, out)
	}
}
