package quorum

import (
	"fmt"
	"slices"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"

	"github.com/skein-log/skein/internal/invariant"
)

// ChangeKind names a membership change.
type ChangeKind int

const (
	ChangeAddVoter ChangeKind = iota + 1
	ChangeRemoveVoter
	// changeAnnounce writes a standalone founder's own record into the
	// log (see announce); it reports no result.
	changeAnnounce
)

func (k ChangeKind) String() string {
	switch k {
	case ChangeAddVoter:
		return "add-voter"
	case ChangeRemoveVoter:
		return "remove-voter"
	case ChangeUpdateVoter:
		return "update-voter"
	case ChangeKRaftUpgrade:
		return "kraft-upgrade"
	}
	return fmt.Sprintf("change(%d)", int(k))
}

// ChangeResult is how a membership change this leader drove ended: Err is
// nil once the change is committed and applied here, a *NotLeaderError when
// leadership was lost first (the change may still complete under the next
// leader, or not), or ErrChangeAborted.
type ChangeResult struct {
	Kind   ChangeKind
	NodeID int32
	Err    error
}

// memberChange is the leader's one change in flight.
type memberChange struct {
	kind   ChangeKind
	member Member
	// stage of an add: the learner entry proposed, the learner in the
	// configuration (catching up), the promotion proposed.
	stage addStage
}

type addStage int

const (
	// stageStaleRemoving: a learner of the same node id with another
	// directory id (a replaced disk) is being removed first, so that
	// Raft's progress for the id starts afresh.
	stageStaleRemoving addStage = iota + 1
	// stageStaleRemoved: it is gone; the learner is proposed next.
	stageStaleRemoved
	stageLearnerProposed
	stageCatchingUp
	stagePromotionProposed
)

// bootConfiguration is the configuration before any change: the static
// voters, or the dynamic quorum's recorded (or now founded) bootstrap.
func bootConfiguration(cfg CoreConfig, d *disk) (*raftpb.ConfState, members, error) {
	if !cfg.Dynamic {
		dyn, err := d.isDynamic()
		if err != nil {
			return nil, nil, err
		}
		if dyn {
			return nil, nil, fmt.Errorf("%s holds a dynamic quorum's state: it needs controller.quorum.bootstrap.servers, not controller.quorum.voters", d.dir)
		}
		ms := members{}
		for _, id := range cfg.Voters {
			ms[id] = Member{NodeID: NodeID(id)}
		}
		return &raftpb.ConfState{Voters: slices.Clone(cfg.Voters)}, ms, nil
	}
	proposed := Membership{Dynamic: true}
	if cfg.Standalone {
		proposed.Voters = []Member{cfg.Self}
	}
	_, cs := recordsOf(&proposed)
	data, err := wrapSnapshot(proposed, nil)
	if err != nil {
		return nil, nil, err
	}
	boot, err := d.bootstrap(&raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{ConfState: cs}})
	if err != nil {
		return nil, nil, err
	}
	got, _, err := UnwrapSnapshot(boot.GetData())
	if err != nil {
		return nil, nil, err
	}
	if got == nil {
		return nil, nil, fmt.Errorf("%w: quorum bootstrap without a membership", ErrCorruptState)
	}
	ms, bootCS := recordsOf(got)
	return bootCS, ms, nil
}

// adoptSnapshotMembership takes a dynamic quorum's membership from a
// snapshot and returns the state machine's part of its bytes.
func (c *Core) adoptSnapshotMembership(snap *raftpb.Snapshot) ([]byte, error) {
	if !c.dynamic && !hasMembership(snap.GetData()) {
		return snap.GetData(), nil // a static quorum's, not upgraded yet
	}
	got, data, err := UnwrapSnapshot(snap.GetData())
	if err != nil {
		return nil, err
	}
	if got == nil {
		// A dynamic quorum writes the envelope into every snapshot; one
		// without it is a static quorum's from before its kraft.version
		// upgrade, sent to a node that joined after it: this node follows
		// it as static until it applies the upgrade.
		c.dynamic = false
		c.confState = cloneConfState(snap.GetMetadata().GetConfState())
		c.members = members{}
		for _, id := range c.confState.GetVoters() {
			c.members[id] = Member{NodeID: NodeID(id)}
		}
		return data, nil
	}
	ms, cs := recordsOf(got)
	if !sameIDs(cs.GetVoters(), snap.GetMetadata().GetConfState().GetVoters()) || !sameIDs(cs.GetLearners(), snap.GetMetadata().GetConfState().GetLearners()) {
		return nil, fmt.Errorf("%w: snapshot at index %d: membership %v/%v, configuration %v", ErrCorruptState, snap.GetMetadata().GetIndex(), cs.GetVoters(), cs.GetLearners(), snap.GetMetadata().GetConfState())
	}
	c.members = ms
	c.confState = cloneConfState(snap.GetMetadata().GetConfState())
	c.dynamic = true   // a static quorum's node past the upgrade, too
	c.announced = true // the snapshot records every member
	c.noteJoined()
	return data, nil
}

func cloneConfState(cs *raftpb.ConfState) *raftpb.ConfState {
	return &raftpb.ConfState{
		Voters: slices.Clone(cs.GetVoters()), Learners: slices.Clone(cs.GetLearners()),
		VotersOutgoing: slices.Clone(cs.GetVotersOutgoing()), LearnersNext: slices.Clone(cs.GetLearnersNext()),
	}
}

// isMember reports whether id is in the configuration (voter or learner).
func (c *Core) isMember(id uint64) bool {
	cs := c.confState
	return slices.Contains(cs.GetVoters(), id) || slices.Contains(cs.GetLearners(), id) ||
		slices.Contains(cs.GetVotersOutgoing(), id) || slices.Contains(cs.GetLearnersNext(), id)
}

// checkRecords: every node of the configuration has its member record and
// no record outlives its node (what Membership and the transport read).
func (c *Core) checkRecords() string {
	for id := range c.members {
		if !c.isMember(id) {
			return fmt.Sprintf("raft id %d has a member record but is not in the configuration %v", id, c.confState)
		}
	}
	for _, ids := range [][]uint64{c.confState.GetVoters(), c.confState.GetLearners()} {
		for _, id := range ids {
			if _, ok := c.members[id]; !ok {
				return fmt.Sprintf("raft id %d is in the configuration without a member record", id)
			}
		}
	}
	return ""
}

func (c *Core) isVoter(id uint64) bool { return slices.Contains(c.confState.GetVoters(), id) }

// Membership is the current configuration with its member records.
func (c *Core) Membership() Membership {
	return c.members.membership(c.confState, c.dynamic)
}

// applyConfChange applies one committed configuration change to Raft and
// to the member records, and moves the leader's change along.
func (c *Core) applyConfChange(e *raftpb.Entry) error {
	voters, upgrade, isUpgrade, err := decodeUpgrade(e)
	if err != nil {
		return err
	}
	if isUpgrade {
		return c.applyUpgrade(e, voters, upgrade)
	}
	if !c.dynamic {
		// A static quorum's only configuration change is the kraft.version
		// upgrade; every node skips any other alike.
		c.logger.Error("ignoring a configuration change entry in a static quorum", "index", e.GetIndex(), "type", e.GetType())
		return nil
	}
	if e.GetType() != raftpb.EntryConfChangeV2 {
		return fmt.Errorf("%w: configuration change entry %d of type %s", ErrCorruptState, e.GetIndex(), e.GetType())
	}
	cc, m, err := confChangeMember(e)
	if err != nil {
		return err
	}
	c.confState = cloneConfState(c.rn.ApplyConfChange(cc))
	applyToMembers(c.members, cc, m)
	if msg := c.checkRecords(); msg != "" {
		return fmt.Errorf("%w: after the change at index %d: %s", ErrCorruptState, e.GetIndex(), invariant.Broken("%s", msg))
	}
	c.announced = true
	c.noteJoined()
	// Snapshot at the next Ready: a node just added may need one (the
	// entries before it compacted away), and Raft can only send it a
	// snapshot whose configuration includes it.
	c.snapshotDue = min(c.snapshotDue, c.applied)
	c.logger.Info("quorum membership changed", "index", e.GetIndex(), "change", cc.GetChanges()[0].GetType(),
		"node", m.NodeID, "voters", c.confState.GetVoters(), "learners", c.confState.GetLearners())
	c.changeApplied(cc.GetChanges()[0].GetType(), RaftID(m.NodeID))
	return nil
}

// changeApplied moves the leader's change on when its entry applied.
func (c *Core) changeApplied(t raftpb.ConfChangeType, id uint64) {
	ch := c.change
	if ch == nil || RaftID(ch.member.NodeID) != id {
		return
	}
	switch {
	case ch.kind == ChangeAddVoter && t == raftpb.ConfChangeRemoveNode && ch.stage == stageStaleRemoving:
		ch.stage = stageStaleRemoved
	case ch.kind == ChangeAddVoter && t == raftpb.ConfChangeAddLearnerNode && ch.stage == stageLearnerProposed:
		ch.stage = stageCatchingUp
	case ch.kind == ChangeAddVoter && t == raftpb.ConfChangeAddNode:
		c.finishChange(nil)
	case ch.kind == ChangeRemoveVoter && (t == raftpb.ConfChangeRemoveNode || t == raftpb.ConfChangeAddLearnerNode):
		c.finishChange(nil)
	case ch.kind == ChangeUpdateVoter && t == raftpb.ConfChangeAddNode:
		c.finishChange(nil)
	case ch.kind == ChangeKRaftUpgrade && t == raftpb.ConfChangeAddNode:
		c.finishChange(nil)
	case ch.kind == changeAnnounce:
		c.change = nil
	}
}

func (c *Core) finishChange(err error) {
	if c.change.kind != changeAnnounce {
		c.changesDone = append(c.changesDone, ChangeResult{Kind: c.change.kind, NodeID: c.change.member.NodeID, Err: err})
	}
	c.change = nil
}

// ready to change: the membership is dynamic, this node leads, no change is
// in flight, and the leader has committed and applied an entry of its own
// term (so Raft holds no configuration change of an earlier leader's that
// could still be pending, and would otherwise silently drop ours).
func (c *Core) readyToChange() error {
	if !c.dynamic {
		return ErrStaticQuorum
	}
	if c.failed != nil {
		return c.failed
	}
	st := c.rn.BasicStatus()
	if st.RaftState != raft.StateLeader {
		return &NotLeaderError{Leader: st.Lead}
	}
	if c.change != nil {
		return fmt.Errorf("%w: %s of node %d", ErrChangePending, c.change.kind, c.change.member.NodeID)
	}
	if !c.announced {
		return fmt.Errorf("%w: the founding voter is not recorded in the log yet", ErrChangePending)
	}
	commitTerm, err := c.ms.Term(st.GetCommit())
	if err != nil || commitTerm != st.GetTerm() || c.applied < st.GetCommit() {
		return fmt.Errorf("%w: the leader has not committed an entry of its term yet", ErrChangePending)
	}
	if !c.isVoter(c.cfg.ID) {
		return &NotLeaderError{} // a removed leader hands over; it changes nothing
	}
	return nil
}

// AddVoter starts adding m as a voter: first as a learner, promoted once it
// has caught up (see driveChange). The result comes in Output.Changes. m
// already a learner (removed earlier, or an add that did not finish)
// resumes at the catching-up step; a learner of the same node id with
// another directory id (its disk was replaced) is removed first.
func (c *Core) AddVoter(m Member) error {
	if err := c.readyToChange(); err != nil {
		return err
	}
	if err := m.validate(); err != nil {
		return err
	}
	id := RaftID(m.NodeID)
	if c.isVoter(id) {
		return fmt.Errorf("%w: node %d", ErrDuplicateVoter, m.NodeID)
	}
	if len(c.confState.GetVoters()) >= maxVoters {
		return fmt.Errorf("%w: already %d voters", ErrInvalidChange, maxVoters)
	}
	if slices.Contains(c.confState.GetLearners(), id) {
		old := c.members[id]
		if old.DirectoryID == m.DirectoryID {
			c.change = &memberChange{kind: ChangeAddVoter, member: m, stage: stageCatchingUp}
			c.driveChange()
			return nil
		}
		if err := c.proposeChange(raftpb.ConfChangeRemoveNode, old); err != nil {
			return err
		}
		c.change = &memberChange{kind: ChangeAddVoter, member: m, stage: stageStaleRemoving}
		return nil
	}
	if err := c.proposeChange(raftpb.ConfChangeAddLearnerNode, m); err != nil {
		return err
	}
	c.change = &memberChange{kind: ChangeAddVoter, member: m, stage: stageLearnerProposed}
	return nil
}

// RemoveVoter starts removing the voter with node id and directory id dir.
// A voter becomes a learner, which keeps receiving the log but neither
// votes nor counts for commits: what Kafka shows as an observer, so a
// combined node keeps its metadata current. Removing a learner drops it
// from the configuration altogether (a node gone for good). A leader that
// removes itself keeps leading until the change commits, then hands
// leadership to the most caught-up voter.
func (c *Core) RemoveVoter(nodeID int32, dir [16]byte) error {
	if err := c.readyToChange(); err != nil {
		return err
	}
	id := RaftID(nodeID)
	m, ok := c.members[id]
	if !ok || !c.isMember(id) || m.DirectoryID != dir {
		return fmt.Errorf("%w: node %d with directory id %x", ErrVoterNotFound, nodeID, dir)
	}
	if c.isVoter(id) && len(c.confState.GetVoters()) == 1 {
		return fmt.Errorf("%w: node %d is the only voter", ErrInvalidChange, nodeID)
	}
	t := raftpb.ConfChangeRemoveNode
	if c.isVoter(id) {
		t = raftpb.ConfChangeAddLearnerNode
	}
	if err := c.proposeChange(t, m); err != nil {
		return err
	}
	c.change = &memberChange{kind: ChangeRemoveVoter, member: m}
	return nil
}

// AbortChange gives up the change in flight (its caller timed out): the
// result is ErrChangeAborted. An entry already proposed may still commit;
// a learner left behind neither votes nor counts for commits, and a later
// AddVoter resumes it or RemoveVoter removes it.
func (c *Core) AbortChange() {
	if c.change != nil {
		c.finishChange(ErrChangeAborted)
	}
}

func (c *Core) proposeChange(t raftpb.ConfChangeType, m Member) error {
	cc, err := newConfChange(t, m)
	if err != nil {
		return err
	}
	if err := c.rn.ProposeConfChange(cc); err != nil {
		return fmt.Errorf("quorum: propose %s of node %d: %w", t, m.NodeID, err)
	}
	return nil
}

// driveChange is the leader's step after every Ready and tick: it ends
// the change if leadership is gone, promotes a learner that has caught up,
// and makes a leader removed from the configuration hand over.
func (c *Core) driveChange() {
	st := c.rn.Status()
	if st.RaftState != raft.StateLeader {
		if c.change != nil {
			c.finishChange(&NotLeaderError{Leader: st.Lead})
		}
		return
	}
	if !c.isVoter(c.cfg.ID) {
		c.handOver(st)
		return
	}
	c.announce()
	ch := c.change
	if ch != nil && ch.stage == stageStaleRemoved {
		if err := c.proposeChange(raftpb.ConfChangeAddLearnerNode, ch.member); err != nil {
			c.finishChange(err)
			return
		}
		ch.stage = stageLearnerProposed
		return
	}
	if ch == nil || ch.stage != stageCatchingUp {
		return
	}
	pr, ok := st.Progress[RaftID(ch.member.NodeID)]
	// Caught up: its log holds everything committed so far, so as a voter
	// it adds to commits at once instead of holding them back.
	if !ok || pr.Match < st.GetCommit() {
		return
	}
	if err := c.proposeChange(raftpb.ConfChangeAddNode, ch.member); err != nil {
		c.finishChange(err)
		return
	}
	ch.stage = stagePromotionProposed
}

// handOver transfers leadership from a leader that is no longer a voter
// to the voter with the longest log; Raft retries nothing on its own, so
// this runs on every tick until another node leads.
func (c *Core) handOver(st raft.Status) {
	if st.LeadTransferee != 0 {
		return
	}
	var best uint64
	var bestMatch uint64
	for id, pr := range st.Progress {
		if id == c.cfg.ID || pr.IsLearner || !c.isVoter(id) {
			continue
		}
		if best == 0 || pr.Match > bestMatch || pr.Match == bestMatch && id < best {
			best, bestMatch = id, pr.Match
		}
	}
	if best != 0 {
		c.logger.Info("removed from the quorum: handing leadership over", "to", NodeID(best))
		c.rn.TransferLeader(best)
	}
}

// announce makes the leader's own record in the log what it should be.
// A standalone founder's membership lives in its bootstrap file only, but
// a node that joins later rebuilds its configuration from the log (or a
// snapshot): without this entry it would never learn that the founder
// votes. And a leader that came back with other endpoints than its record
// names updates it, as it would ask another leader to (UpdateRaftVoter).
// Either change is a no-op for Raft (the leader is a voter already) and
// comes before any other: AddVoter and RemoveVoter wait for it.
func (c *Core) announce() {
	if !c.dynamic || c.change != nil {
		return
	}
	self, stale := c.staleSelf()
	if c.announced && !stale {
		return
	}
	st := c.rn.BasicStatus()
	commitTerm, err := c.ms.Term(st.GetCommit())
	if err != nil || commitTerm != st.GetTerm() || c.applied < st.GetCommit() {
		return // as readyToChange: not before the leader's own entry applied
	}
	if !stale {
		var ok bool
		if self, ok = c.members[c.cfg.ID]; !ok || !c.isVoter(c.cfg.ID) {
			return
		}
	}
	if err := c.proposeChange(raftpb.ConfChangeAddNode, self); err != nil {
		c.logger.Warn("could not record this leader's own voter record in the log", "err", err)
		return
	}
	c.change = &memberChange{kind: changeAnnounce, member: self}
}

// Replica is one member's replication state as the leader sees it.
// LogEndOffset is in Kafka's terms (the offset after the member's last
// entry: Raft index i is offset i-1), -1 when unknown.
type Replica struct {
	Member
	LogEndOffset int64
	// LastFetch and LastCaughtUp are when the leader last heard from the
	// member and last saw it hold the leader's whole log; zero when
	// unknown (and always for the leader itself). The Core has no clock:
	// Node fills them in.
	LastFetch    time.Time
	LastCaughtUp time.Time
}

// Description is DescribeQuorum's answer, from the leader.
type Description struct {
	LeaderID    int32
	LeaderEpoch uint64
	// HighWatermark is the offset after the last committed entry.
	HighWatermark int64
	Voters        []Replica
	// Learners are members catching up to be promoted; DescribeQuorum
	// shows them among the observers.
	Learners []Replica
	Dynamic  bool
}

// Describe is the leader's view of the quorum; on a follower it fails
// with a *NotLeaderError (Kafka: NOT_LEADER_OR_FOLLOWER).
func (c *Core) Describe() (Description, error) {
	st := c.rn.Status()
	if st.RaftState != raft.StateLeader {
		return Description{}, &NotLeaderError{Leader: st.Lead}
	}
	last, _ := c.ms.LastIndex()
	replica := func(m Member) Replica {
		r := Replica{Member: m, LogEndOffset: -1}
		id := RaftID(m.NodeID)
		if id == c.cfg.ID {
			r.LogEndOffset = int64(last)
		} else if pr, ok := st.Progress[id]; ok {
			r.LogEndOffset = int64(pr.Match)
		}
		return r
	}
	ms := c.Membership()
	d := Description{LeaderID: NodeID(c.cfg.ID), LeaderEpoch: st.GetTerm(), HighWatermark: int64(st.GetCommit()), Dynamic: c.dynamic}
	for _, v := range ms.Voters {
		d.Voters = append(d.Voters, replica(v))
	}
	for _, l := range ms.Learners {
		d.Learners = append(d.Learners, replica(l))
	}
	return d, nil
}

// peerMatch is the leader's match index for peer id (false: not tracked).
func (c *Core) peerMatch(id uint64) (uint64, bool) {
	var match uint64
	found := false
	c.rn.WithProgress(func(pid uint64, _ raft.ProgressType, pr tracker.Progress) {
		if pid == id {
			match, found = pr.Match, true
		}
	})
	return match, found
}

// lastIndex is the index of the last entry in this node's log.
func (c *Core) lastIndex() uint64 {
	last, _ := c.ms.LastIndex()
	return last
}

// impostor: the configuration counts this node id as a voter with another
// directory id. The disk that voter's votes were stored on is gone, and
// this one holds none of them: voting again could elect two leaders in one
// term. Kafka keys voters by (id, directory id) for the same reason. Such
// a node neither grants votes nor campaigns; it still takes the log (its
// acknowledgements are true of what it holds), so it learns when the
// operator removes the old voter and adds it.
func (c *Core) impostor() bool {
	if !c.dynamic || !c.isVoter(c.cfg.ID) {
		return false
	}
	m, ok := c.members[c.cfg.ID]
	return ok && m.DirectoryID != c.cfg.Self.DirectoryID
}

// mayVote refuses a vote request a dynamic quorum's node must not answer:
// one whose directory has never been a member (a node not yet added, or a
// new disk whose old record is still a voter elsewhere: it holds none of
// that disk's votes, so answering could elect two leaders in one term), or
// an impostor.
func (c *Core) mayVote(m *raftpb.Message) error {
	if t := m.GetType(); !c.dynamic || (t != raftpb.MsgVote && t != raftpb.MsgPreVote) {
		return nil
	}
	if c.impostor() {
		return fmt.Errorf("quorum: not voting: node %d is a voter with directory id %x, this directory is %x (remove that voter with skein cluster quorum remove-controller, then add this one)",
			NodeID(c.cfg.ID), c.members[c.cfg.ID].DirectoryID, c.cfg.Self.DirectoryID)
	}
	if !c.joined {
		return fmt.Errorf("quorum: not voting in term %d: this directory has not joined the quorum yet", m.GetTerm())
	}
	return nil
}

// noteJoined records that the configuration has counted this node, with
// this directory, as a member: from then on its votes are its own. A node
// that was a voter still votes once demoted or removed, as Raft requires
// (a voter of the old configuration may need it to elect a leader that
// has the change).
func (c *Core) noteJoined() {
	if m, ok := c.members[c.cfg.ID]; ok && c.isMember(c.cfg.ID) && m.DirectoryID == c.cfg.Self.DirectoryID {
		c.joined = true
	}
}
