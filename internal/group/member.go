package group

import "bytes"

// member is one member of a group.
type member struct {
	id         string
	instanceID string // "" for a dynamic member
	clientID   string
	clientHost string

	sessionTimeoutMs   int64
	rebalanceTimeoutMs int64
	protocols          []Protocol // in the member's order of preference
	assignment         []byte

	// joinSeq orders members by when they joined; it makes leader choice,
	// listings and answers deterministic.
	joinSeq uint64

	lastHeartbeat int64
	// isNew marks a member that joined during the current rebalance and has
	// never completed one; joinedAt bounds how long it may stay parked.
	isNew    bool
	joinedAt int64

	// A parked JoinGroup or SyncGroup, answered when the rebalance or the
	// leader's assignment completes.
	joinWaiting bool
	joinReq     RequestID
	syncWaiting bool
	syncReq     RequestID
}

func newMember(id string, now int64, req JoinRequest) *member {
	m := &member{id: id, instanceID: req.InstanceID, isNew: true, joinedAt: now}
	m.update(now, req)
	return m
}

// update takes what a JoinGroup may change: timeouts, protocols, client.
func (m *member) update(now int64, req JoinRequest) {
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	m.sessionTimeoutMs = int64(req.SessionTimeoutMs)
	m.rebalanceTimeoutMs = int64(req.RebalanceTimeoutMs)
	if m.rebalanceTimeoutMs <= 0 { // JoinGroup v0 has no rebalance timeout
		m.rebalanceTimeoutMs = m.sessionTimeoutMs
	}
	m.protocols = req.Protocols
	m.lastHeartbeat = now
}

// sameProtocols reports whether a rejoin carries exactly the protocols and
// metadata the member already has, which makes it a no-op (a retry of a
// lost answer) rather than a reason to rebalance.
func (m *member) sameProtocols(ps []Protocol) bool {
	if len(ps) != len(m.protocols) {
		return false
	}
	for i := range ps {
		if ps[i].Name != m.protocols[i].Name || !bytes.Equal(ps[i].Metadata, m.protocols[i].Metadata) {
			return false
		}
	}
	return true
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// sessionDeadline is when the member expires unless it heartbeats, and
// false while it cannot expire. A member parked in a join or a sync is kept
// alive (KIP-62: the rebalance timeout bounds that wait, not the session),
// except a new member, which may wait newMemberJoinTimeoutMs at most.
func (m *member) sessionDeadline() (int64, bool) {
	switch {
	case m.joinWaiting && m.isNew:
		return m.joinedAt + newMemberJoinTimeoutMs, true
	case m.joinWaiting, m.syncWaiting:
		return 0, false
	default:
		return m.lastHeartbeat + m.sessionTimeoutMs, true
	}
}
