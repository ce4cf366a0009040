package group

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Coordinator holds the groups of one __consumer_offsets partition. It is
// not safe for concurrent use: the runtime serialises calls.
type Coordinator struct {
	cfg    Config
	groups map[string]*Group
	timers timerHeap

	// Member ids are <prefix>-<nonce>-<seq>: the runtime's nonce (random, or
	// from the simulator's seed) keeps ids of this coordinator apart from
	// those a previous coordinator of the partition handed out.
	idNonce uint64
	idSeq   uint64
	// writeSeq numbers AssignmentWrites.
	writeSeq WriteID
	// commitSeq orders offset commits as the log does (records are
	// written in the order the coordinator makes them, and replayed in
	// that order): a transaction's offsets replace a committed offset only
	// if they were written after it, as Kafka compares log offsets.
	commitSeq uint64
	// txnProducers are the producers that wrote transactional offset
	// commits to this partition.
	txnProducers map[int64]*txnProducer
}

// New returns an empty coordinator. memberIDNonce must differ between
// coordinator incarnations of a partition (the runtime passes a random
// number); the package itself draws no randomness.
func New(cfg Config, memberIDNonce uint64) (*Coordinator, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Coordinator{cfg: cfg, groups: make(map[string]*Group), txnProducers: make(map[int64]*txnProducer), idNonce: memberIDNonce}, nil
}

func (c *Coordinator) newMemberID(g *Group, prefix string) string {
	for {
		c.idSeq++
		id := fmt.Sprintf("%s-%016x-%d", prefix, c.idNonce, c.idSeq)
		if _, taken := g.members[id]; taken {
			continue
		}
		if _, taken := g.pending[id]; taken {
			continue
		}
		return id
	}
}

// changed re-arms g's timer and drops a group that never held anything.
func (c *Coordinator) changed(g *Group) {
	if g.state == Empty && len(g.members) == 0 && len(g.pending) == 0 && len(g.offsets) == 0 && len(g.txnOffsets) == 0 && !g.persisted {
		delete(c.groups, g.id)
		return
	}
	c.timers.schedule(g)
}

// Join handles JoinGroup. The answer to req.ID is in the Output, now or in
// a later call's.
func (c *Coordinator) Join(now int64, req JoinRequest) Output {
	var out Output
	if req.GroupID == "" {
		out.joinError(req.ID, req.MemberID, kerr.InvalidGroupID)
		return out
	}
	if st := int64(req.SessionTimeoutMs); st < c.cfg.MinSessionTimeoutMs || st > c.cfg.MaxSessionTimeoutMs {
		out.joinError(req.ID, req.MemberID, kerr.InvalidSessionTimeout)
		return out
	}
	// Checked after the group id and session timeout, as Kafka does (a
	// client's own tests, kafka-go's, tell them apart), and before a
	// group is created for a join that cannot succeed.
	if req.ProtocolType == "" || len(req.Protocols) == 0 {
		out.joinError(req.ID, req.MemberID, kerr.InconsistentGroupProtocol)
		return out
	}
	g := c.groups[req.GroupID]
	if g == nil {
		if req.MemberID != "" {
			out.joinError(req.ID, req.MemberID, kerr.UnknownMemberID)
			return out
		}
		g = newGroup(c, req.GroupID, now)
		c.groups[req.GroupID] = g
	}
	g.join(now, req, &out)
	c.changed(g)
	return out
}

// Sync handles SyncGroup. The answer to req.ID is in the Output, now or in
// a later call's.
func (c *Coordinator) Sync(now int64, req SyncRequest) Output {
	var out Output
	g := c.groups[req.GroupID]
	switch {
	case req.GroupID == "":
		out.sync(req.ID, SyncResponse{Err: kerr.InvalidGroupID})
	case g == nil:
		out.sync(req.ID, SyncResponse{Err: kerr.UnknownMemberID})
	default:
		g.syncGroup(now, req, &out)
		c.changed(g)
	}
	return out
}

// AssignmentWritten reports the outcome of an AssignmentWrite: err is nil
// once its record is committed, else the append's error. The Output answers
// the syncs that waited for it; an outcome the group no longer waits for is
// ignored.
func (c *Coordinator) AssignmentWritten(now int64, w AssignmentWrite, err error) Output {
	var out Output
	if g := c.groups[w.GroupID]; g != nil {
		g.assignmentWritten(now, w.ID, err, &out)
		c.changed(g)
	}
	return out
}

// Heartbeat handles Heartbeat and returns its error code (nil or a
// *kerr.Error). A heartbeat never changes anything but the member's session.
func (c *Coordinator) Heartbeat(now int64, req HeartbeatRequest) error {
	if req.GroupID == "" {
		return kerr.InvalidGroupID
	}
	g := c.groups[req.GroupID]
	if g == nil {
		return kerr.UnknownMemberID
	}
	err := g.heartbeat(now, req)
	c.changed(g)
	return err
}

// Leave handles LeaveGroup. The Output holds answers to other members'
// parked requests and records; the returned response waits for them too.
func (c *Coordinator) Leave(now int64, req LeaveRequest) (LeaveResponse, Output) {
	var out Output
	resp := LeaveResponse{Members: make([]error, len(req.Members))}
	if req.GroupID == "" {
		resp.Err = kerr.InvalidGroupID
		return resp, out
	}
	g := c.groups[req.GroupID]
	for i, lm := range req.Members {
		if g == nil {
			resp.Members[i] = kerr.UnknownMemberID
			continue
		}
		resp.Members[i] = g.leave(now, lm, &out)
	}
	if g != nil {
		c.changed(g)
	}
	return resp, out
}

// Tick fires every timer due at now (sessions, rebalance and sync
// timeouts, the initial delay).
func (c *Coordinator) Tick(now int64) Output {
	var out Output
	// Collect first, then fire: each group ticks at most once per call, so
	// a deadline that a bug left in the past cannot spin here.
	for _, g := range c.timers.popDue(now, c.groups) {
		g.tick(now, &out)
		c.changed(g)
	}
	return out
}

// NextDeadline is the time by which Tick must next be called; false when
// no timer is pending.
func (c *Coordinator) NextDeadline() (int64, bool) {
	return c.timers.next(c.groups)
}

// Unload answers every parked request with NOT_COORDINATOR and forgets all
// groups: the partition moved to another broker (or a write failed).
func (c *Coordinator) Unload() Output {
	var out Output
	for _, id := range c.sortedGroupIDs() {
		for _, m := range c.groups[id].orderedMembers() {
			c.groups[id].failParked(m, kerr.NotCoordinator, &out)
		}
	}
	c.groups = make(map[string]*Group)
	c.txnProducers = make(map[int64]*txnProducer)
	c.timers = timerHeap{}
	return out
}
