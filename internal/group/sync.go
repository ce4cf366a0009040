package group

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

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
		// Every sync of the generation waits here, the leader's too, until
		// the leader's assignment is committed (assignmentWritten).
		m.lastHeartbeat = now
		delete(g.pendingSync, m.id)
		g.parkSync(m, req.ID, out)
		if m.id == g.leader && g.assigning == nil {
			// A leader's retry while its first assignment is being written
			// only waits for that write (Kafka would write again).
			g.storeAssignment(req.Assignments, out)
		}
	case Stable:
		m.lastHeartbeat = now
		delete(g.pendingSync, m.id)
		out.sync(req.ID, g.syncResponse(m))
	default:
		fail(kerr.UnknownMemberID)
	}
}

// pendingAssignment is a generation's assignment whose record is being
// written.
type pendingAssignment struct {
	id         WriteID
	generation int32
	given      map[string][]byte // by member id; absent: empty
}

// storeAssignment takes the leader's assignment: members it left out get an
// empty one, ids it invented are ignored. It asks for the record and
// changes nothing else: members act on an assignment as soon as they get
// it, so it must not be answered (or described) before it would survive a
// coordinator failover, and a failed write must leave no trace but a
// rebalance.
func (g *Group) storeAssignment(as []Assignment, out *Output) {
	given := make(map[string][]byte, len(as))
	for _, a := range as {
		if g.members[a.MemberID] != nil {
			given[a.MemberID] = a.Assignment
		}
	}
	g.coord.writeSeq++
	g.assigning = &pendingAssignment{id: g.coord.writeSeq, generation: g.generation, given: given}
	out.AssignmentWrites = append(out.AssignmentWrites, AssignmentWrite{
		ID:      g.assigning.id,
		GroupID: g.id,
		Record:  groupMetadataRecordWith(g, func(m *member) []byte { return given[m.id] }),
	})
	// A write reported failed may still reach the log: removing the group
	// must then write a tombstone.
	g.persisted = true
}

// assignmentWritten takes the outcome of the assignment's record. An
// outcome the group no longer waits for is stale and ignored: the group
// left CompletingRebalance of that generation (a member joined, left or
// expired) and that rebalance answered the parked syncs.
func (g *Group) assignmentWritten(now int64, id WriteID, err error, out *Output) {
	p := g.assigning
	if p == nil || p.id != id || g.state != CompletingRebalance || p.generation != g.generation {
		return
	}
	g.assigning = nil
	if err != nil {
		err = storeError(err)
		for _, m := range g.orderedMembers() {
			m.assignment = nil
			g.answerSync(m, SyncResponse{Err: err}, out)
		}
		g.maybePrepareRebalance(now, out)
		return
	}
	for _, m := range g.members {
		m.assignment = p.given[m.id]
	}
	g.transition(Stable, now)
	for _, m := range g.orderedMembers() {
		g.answerSync(m, g.syncResponse(m), out)
	}
}

// storeError is what the syncs of a generation whose assignment could not
// be written are answered, mapped from the append's error as Kafka maps it
// (GroupMetadataManager.storeGroup): errors of an unavailable partition
// become COORDINATOR_NOT_AVAILABLE and those of a lost leadership or disk
// NOT_COORDINATOR, both of which make a client find the coordinator again
// and rejoin.
func storeError(err error) error {
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.NotEnoughReplicas),
		errors.Is(err, kerr.NotEnoughReplicasAfterAppend), errors.Is(err, kerr.RequestTimedOut):
		return kerr.CoordinatorNotAvailable
	case errors.Is(err, kerr.NotLeaderForPartition), errors.Is(err, kerr.KafkaStorageError):
		return kerr.NotCoordinator
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge), errors.Is(err, kerr.InvalidFetchSize):
		return kerr.UnknownServerError
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	// Not a Kafka error: a failure of the runtime itself, for which the
	// client's answer is to find the coordinator again.
	return kerr.CoordinatorNotAvailable
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
