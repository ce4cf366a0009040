package quorum

import (
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Updating a voter's record (KIP-853's UpdateRaftVoter). A voter that comes
// back with other endpoints (a new port, a new host name) or another
// supported kraft.version range tells the leader, which writes the new
// record into the log as a configuration change: an AddNode of a node that
// is a voter already, a no-op for Raft's configuration that every node
// (and observer) applies to its member records. From then on Describe,
// the transports of every node and the brokers' controller endpoints use
// the new endpoints, across restarts (the record is in the log and in
// every later snapshot's envelope).
//
// The voter decides by itself when to ask (selfUpdate): it is a voter with
// this directory, it knows the leader, and its record differs from its own
// configuration. A leader whose own record is stale writes it without a
// request (see announce).

// KRaft versions (Kafka's kraft.version feature). 0 is a static quorum
// (controller.quorum.voters), 1 a dynamic one whose voters are in the log.
// This node supports both; the version in use is the quorum's kind.
const (
	KRaftVersionStatic  int16 = 0
	KRaftVersionDynamic int16 = 1
)

// VersionRange is a node's supported kraft.version range, as
// UpdateRaftVoter's KRaftVersionFeature carries it.
type VersionRange struct{ Min, Max int16 }

// SupportedKRaftVersions is what this build supports.
var SupportedKRaftVersions = VersionRange{Min: KRaftVersionStatic, Max: KRaftVersionDynamic}

func (r VersionRange) includes(v int16) bool { return r.Min <= r.Max && r.Min <= v && v <= r.Max }

// Errors of UpdateVoter's leader epoch check (Kafka's FENCED_LEADER_EPOCH,
// UNKNOWN_LEADER_EPOCH): the sender's view of the leader is older, or
// newer, than this leader's term.
var (
	ErrFencedLeaderEpoch  = errors.New("the request's leader epoch is older than the leader's")
	ErrUnknownLeaderEpoch = errors.New("the request's leader epoch is newer than the leader's")
)

// ChangeUpdateVoter is the kind of an UpdateVoter's result.
const ChangeUpdateVoter ChangeKind = changeAnnounce + 1

// VoterUpdate is a voter's request to the leader to record its endpoints:
// Output.SelfUpdate, to be sent as UpdateRaftVoter to Leader in Term.
type VoterUpdate struct {
	Member Member
	Leader uint64 // the leader's Raft id
	Term   uint64 // its term: the request's CurrentLeaderEpoch
}

// selfUpdateRetryTicks is how long a voter waits for its record to change
// before asking again, in election timeouts: the request may have been
// lost, refused (a change in progress) or gone to a leader that lost its
// leadership.
const selfUpdateRetryElections = 2

// UpdateVoter records m, the new endpoints of the voter with m's node id
// and directory id (UpdateRaftVoter), if this node leads. leaderEpoch is
// the term the sender believes the leader is in (-1: unknown) and kraft
// the kraft.version range the voter supports. The result comes in
// Output.Changes once the record is committed and applied here; a record
// that is already m succeeds without a change.
func (c *Core) UpdateVoter(m Member, leaderEpoch int32, kraft VersionRange) error {
	if c.failed != nil {
		return c.failed
	}
	st := c.rn.BasicStatus()
	if st.RaftState != raft.StateLeader {
		return &NotLeaderError{Leader: st.Lead}
	}
	if leaderEpoch >= 0 && uint64(leaderEpoch) < st.GetTerm() {
		return fmt.Errorf("%w: %d, the leader is in %d", ErrFencedLeaderEpoch, leaderEpoch, st.GetTerm())
	}
	if leaderEpoch >= 0 && uint64(leaderEpoch) > st.GetTerm() {
		return fmt.Errorf("%w: %d, the leader is in %d", ErrUnknownLeaderEpoch, leaderEpoch, st.GetTerm())
	}
	if !c.dynamic {
		return c.noteVolatile(m, kraft)
	}
	if err := c.readyToChange(); err != nil {
		return err
	}
	if !kraft.includes(KRaftVersionDynamic) {
		return fmt.Errorf("%w: node %d supports kraft.version %d to %d, the quorum is at %d", ErrInvalidChange, m.NodeID, kraft.Min, kraft.Max, KRaftVersionDynamic)
	}
	if err := m.validate(); err != nil {
		return err
	}
	// The voters reach each other on the leader's listener name (as
	// Kafka requires the default listener among the endpoints).
	if name := c.listenerName(); name != "" && !slices.ContainsFunc(m.Listeners, func(l Listener) bool { return l.Name == name }) {
		return fmt.Errorf("%w: node %d has no %s endpoint", ErrInvalidChange, m.NodeID, name)
	}
	id := RaftID(m.NodeID)
	old, ok := c.members[id]
	if !ok || !c.isVoter(id) || old.DirectoryID != m.DirectoryID {
		return fmt.Errorf("%w: no voter %d with directory id %x", ErrVoterNotFound, m.NodeID, m.DirectoryID)
	}
	if slices.Equal(old.Listeners, m.Listeners) {
		c.changesDone = append(c.changesDone, ChangeResult{Kind: ChangeUpdateVoter, NodeID: m.NodeID})
		return nil
	}
	if err := c.proposeChange(raftpb.ConfChangeAddNode, m); err != nil {
		return err
	}
	c.change = &memberChange{kind: ChangeUpdateVoter, member: m}
	return nil
}

// listenerName is the name of the listener the quorum runs on: this
// node's own first endpoint's ("" if it has none).
func (c *Core) listenerName() string {
	if len(c.cfg.Self.Listeners) == 0 {
		return ""
	}
	return c.cfg.Self.Listeners[0].Name
}

// staleSelf is this node's own record as its configuration has it, when
// the leader should be sent it: in a dynamic quorum, the log's record of
// it is a voter with this directory but other endpoints; in a static one,
// the leader of this term has not answered it yet (it keeps what it is
// sent in memory only, for the kraft.version upgrade).
func (c *Core) staleSelf() (Member, bool) {
	if !c.cfg.UpdateSelf || len(c.cfg.Self.Listeners) == 0 || !c.isVoter(c.cfg.ID) {
		return Member{}, false
	}
	if !c.dynamic {
		st := c.rn.BasicStatus()
		return c.cfg.Self, c.selfAnswered != [2]uint64{st.Lead, st.GetTerm()}
	}
	rec, ok := c.members[c.cfg.ID]
	if !ok || rec.DirectoryID != c.cfg.Self.DirectoryID || slices.Equal(rec.Listeners, c.cfg.Self.Listeners) {
		return Member{}, false
	}
	return c.cfg.Self, true
}

// SelfUpdateAnswered tells the Core that the leader answered u without an
// error: a static voter stops asking that leader in that term.
func (c *Core) SelfUpdateAnswered(u VoterUpdate) { c.selfAnswered = [2]uint64{u.Leader, u.Term} }

// planSelfUpdate runs on every tick: a follower whose record is stale asks
// the leader it knows, then again every selfUpdateRetryElections election
// timeouts until the record changes.
func (c *Core) planSelfUpdate() {
	if c.selfUpdateWait > 0 {
		c.selfUpdateWait--
		return
	}
	self, ok := c.staleSelf()
	st := c.rn.BasicStatus()
	if !ok || c.failed != nil || st.RaftState == raft.StateLeader || st.Lead == 0 {
		return
	}
	c.selfUpdate = &VoterUpdate{Member: self, Leader: st.Lead, Term: st.GetTerm()}
	c.selfUpdateWait = selfUpdateRetryElections * c.cfg.ElectionTicks
}
