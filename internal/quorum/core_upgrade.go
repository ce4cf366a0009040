package quorum

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Upgrading a static quorum to a dynamic one (kraft.version 0 to 1, as
// Kafka 4.1's `kafka-features upgrade --feature kraft.version=1`). A static
// quorum's records know node ids only; the log must record every voter's
// directory id and endpoints before AddVoter and RemoveVoter can work. So,
// as in Kafka, each static voter sends its record to the leader
// (UpdateRaftVoter at kraft.version 0, see staleSelf), which keeps them in
// memory for its term. The upgrade (UpgradeKRaft, from UpdateFeatures)
// needs every voter's record, each supporting kraft.version 1; it is one
// configuration change, a no-op AddNode of the leader for Raft, whose
// Context carries every voter's record. Every node that applies it becomes
// dynamic; the snapshots after it carry the membership envelope, so a
// restarted node (still configured with controller.quorum.voters) comes
// back dynamic from its snapshot or its log. The upgrade cannot be undone
// (Kafka refuses kraft.version downgrades too).

// ErrUpgradeNotReady: some voter's record is unknown to the leader, or a
// voter does not support kraft.version 1; the upgrade is refused (Kafka's
// INVALID_UPDATE_VERSION).
var ErrUpgradeNotReady = errors.New("kraft.version 1 needs every voter's directory id and endpoints")

// ChangeKRaftUpgrade is the kind of an UpgradeKRaft's result.
const ChangeKRaftUpgrade ChangeKind = changeAnnounce + 2

// volatileVoter is a static voter's record as it sent it.
type volatileVoter struct {
	member Member
	kraft  VersionRange
}

// maxUpgradeVoters bounds the records an upgrade entry may carry.
const maxUpgradeVoters = maxVoters

// upgradeContext is the upgrade entry's Context: the leader's record (as
// every change names one member) and every voter's.
type upgradeContext struct {
	Member
	Upgrade []Member `json:"kraft_upgrade"`
}

// KRaftVersion is the quorum's kraft.version: 1 when its voters are the
// log's, 0 when they are configuration.
func (c *Core) KRaftVersion() int16 {
	if c.dynamic {
		return KRaftVersionDynamic
	}
	return KRaftVersionStatic
}

// noteVolatile is UpdateVoter at kraft.version 0: the leader checks the
// record and keeps it for the upgrade; nothing is written to the log. The
// result comes in the next Output.Changes.
func (c *Core) noteVolatile(m Member, kraft VersionRange) error {
	if !kraft.includes(KRaftVersionStatic) {
		return fmt.Errorf("%w: node %d supports kraft.version %d to %d, the quorum is at %d", ErrInvalidChange, m.NodeID, kraft.Min, kraft.Max, KRaftVersionStatic)
	}
	if err := m.validate(); err != nil {
		return err
	}
	if name := c.listenerName(); name != "" && !slices.ContainsFunc(m.Listeners, func(l Listener) bool { return l.Name == name }) {
		return fmt.Errorf("%w: node %d has no %s endpoint", ErrInvalidChange, m.NodeID, name)
	}
	if !c.isVoter(RaftID(m.NodeID)) {
		return fmt.Errorf("%w: node %d is not among controller.quorum.voters", ErrVoterNotFound, m.NodeID)
	}
	if m.DirectoryID == ([16]byte{}) {
		return fmt.Errorf("%w: node %d sent no directory id", ErrInvalidChange, m.NodeID)
	}
	if term := c.rn.BasicStatus().GetTerm(); c.volatileTerm != term {
		c.volatile, c.volatileTerm = map[uint64]volatileVoter{}, term
	}
	c.volatile[RaftID(m.NodeID)] = volatileVoter{member: m, kraft: kraft}
	c.changesDone = append(c.changesDone, ChangeResult{Kind: ChangeUpdateVoter, NodeID: m.NodeID})
	return nil
}

// UpgradeKRaft starts the upgrade to kraft.version 1 on the leader (or,
// with validateOnly, only checks that it could). The result comes in
// Output.Changes; a quorum at kraft.version 1 already succeeds at once.
func (c *Core) UpgradeKRaft(validateOnly bool) error {
	if c.failed != nil {
		return c.failed
	}
	st := c.rn.BasicStatus()
	if st.RaftState != raft.StateLeader {
		return &NotLeaderError{Leader: st.Lead}
	}
	done := func() error {
		c.changesDone = append(c.changesDone, ChangeResult{Kind: ChangeKRaftUpgrade, NodeID: NodeID(c.cfg.ID)})
		return nil
	}
	if c.dynamic {
		return done()
	}
	if c.change != nil {
		return fmt.Errorf("%w: %s of node %d", ErrChangePending, c.change.kind, c.change.member.NodeID)
	}
	commitTerm, err := c.ms.Term(st.GetCommit())
	if err != nil || commitTerm != st.GetTerm() || c.applied < st.GetCommit() {
		return fmt.Errorf("%w: the leader has not committed an entry of its term yet", ErrChangePending)
	}
	voters, err := c.upgradeVoters(st.GetTerm())
	if err != nil {
		return err
	}
	if validateOnly {
		return done()
	}
	self := voters[slices.IndexFunc(voters, func(m Member) bool { return RaftID(m.NodeID) == c.cfg.ID })]
	ctx, err := json.Marshal(upgradeContext{Member: self, Upgrade: voters})
	if err != nil {
		return fmt.Errorf("encode the kraft.version upgrade: %w", err)
	}
	cc := &raftpb.ConfChangeV2{
		Transition: raftpb.ConfChangeTransitionAuto.Enum(),
		Changes:    []*raftpb.ConfChangeSingle{{Type: raftpb.ConfChangeAddNode.Enum(), NodeId: new(c.cfg.ID)}},
		Context:    ctx,
	}
	if err := c.rn.ProposeConfChange(cc); err != nil {
		return fmt.Errorf("quorum: propose the kraft.version upgrade: %w", err)
	}
	c.change = &memberChange{kind: ChangeKRaftUpgrade, member: self}
	return nil
}

// upgradeVoters is every static voter's record as the upgrade writes it:
// this leader's own from its configuration, the others' as they sent them
// in this term.
func (c *Core) upgradeVoters(term uint64) ([]Member, error) {
	var out []Member
	var missing, old []int32
	for _, id := range slices.Sorted(slices.Values(c.confState.GetVoters())) {
		v, ok := c.volatile[id]
		if c.volatileTerm != term {
			ok = false
		}
		if id == c.cfg.ID {
			v, ok = volatileVoter{member: c.cfg.Self, kraft: SupportedKRaftVersions}, c.cfg.UpdateSelf && c.cfg.Self.validate() == nil && c.cfg.Self.DirectoryID != [16]byte{}
		}
		switch {
		case !ok:
			missing = append(missing, NodeID(id))
		case !v.kraft.includes(KRaftVersionDynamic):
			old = append(old, NodeID(id))
		default:
			out = append(out, v.member)
		}
	}
	if len(missing) > 0 || len(old) > 0 {
		return nil, fmt.Errorf("%w: the leader has not heard from voters %v (they send their records within seconds of a new leader; retry), and voters %v do not support it", ErrUpgradeNotReady, missing, old)
	}
	return out, nil
}

// applyUpgrade applies the kraft.version upgrade entry: the quorum's
// voters become the log's, with the records it carries. On a static node
// Raft's configuration already holds exactly those voters. A node that
// joined later and replays the log from its start (a dynamic node with an
// empty bootstrap configuration) gets them added one at a time, locally,
// as every such node does alike.
func (c *Core) applyUpgrade(e *raftpb.Entry, voters []Member, cc *raftpb.ConfChangeV2) error {
	ms := members{}
	ids := make([]uint64, 0, len(voters))
	for _, m := range voters {
		ms[RaftID(m.NodeID)] = m
		ids = append(ids, RaftID(m.NodeID))
	}
	if c.dynamic && len(c.confState.GetVoters()) > 0 {
		// Past the upgrade already (a node restored from a snapshot
		// after it does not see it again): nothing to do.
		c.logger.Warn("ignoring a kraft.version upgrade entry in a dynamic quorum", "index", e.GetIndex())
		return nil
	}
	if !c.dynamic && !sameIDs(ids, c.confState.GetVoters()) {
		// Every node has the same controller.quorum.voters (checked
		// against every snapshot), so this is a node configured apart.
		return fmt.Errorf("%w: the kraft.version upgrade at index %d records voters %v, this node's are %v", ErrCorruptState, e.GetIndex(), ids, c.confState.GetVoters())
	}
	for _, id := range ids {
		if !c.isVoter(id) {
			add := &raftpb.ConfChangeV2{Transition: raftpb.ConfChangeTransitionAuto.Enum(),
				Changes: []*raftpb.ConfChangeSingle{{Type: raftpb.ConfChangeAddNode.Enum(), NodeId: new(id)}}}
			c.confState = cloneConfState(c.rn.ApplyConfChange(add))
		}
	}
	c.confState = cloneConfState(c.rn.ApplyConfChange(cc))
	c.members, c.dynamic, c.announced, c.volatile = ms, true, true, nil
	if msg := c.checkRecords(); msg != "" {
		return fmt.Errorf("%w: after the kraft.version upgrade at index %d: %s", ErrCorruptState, e.GetIndex(), msg)
	}
	c.noteJoined()
	c.snapshotDue = min(c.snapshotDue, c.applied) // record the membership in a snapshot soon
	c.logger.Info("the quorum is at kraft.version 1: its voters are now the log's", "index", e.GetIndex(), "voters", ids)
	c.changeApplied(raftpb.ConfChangeAddNode, cc.GetChanges()[0].GetNodeId())
	return nil
}

// decodeUpgrade reads a configuration change entry as the kraft.version
// upgrade (false if it is not one).
func decodeUpgrade(e *raftpb.Entry) ([]Member, *raftpb.ConfChangeV2, bool, error) {
	if e.GetType() != raftpb.EntryConfChangeV2 {
		return nil, nil, false, nil
	}
	var cc raftpb.ConfChangeV2
	if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
		return nil, nil, false, fmt.Errorf("%w: conf change at index %d: %v", ErrCorruptState, e.GetIndex(), err)
	}
	var ctx upgradeContext
	if json.Unmarshal(cc.GetContext(), &ctx) != nil || len(ctx.Upgrade) == 0 {
		return nil, nil, false, nil
	}
	if len(ctx.Upgrade) > maxUpgradeVoters || len(cc.GetChanges()) != 1 || cc.GetChanges()[0].GetType() != raftpb.ConfChangeAddNode {
		return nil, nil, false, fmt.Errorf("%w: malformed kraft.version upgrade at index %d", ErrCorruptState, e.GetIndex())
	}
	for _, m := range ctx.Upgrade {
		if err := m.validate(); err != nil {
			return nil, nil, false, fmt.Errorf("%w: kraft.version upgrade at index %d: %v", ErrCorruptState, e.GetIndex(), err)
		}
	}
	return ctx.Upgrade, &cc, true, nil
}
