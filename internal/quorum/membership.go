package quorum

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Dynamic membership (KIP-853). With controller.quorum.bootstrap.servers
// the voters are not configuration but state: Raft configuration changes in
// the log, one at a time, each carrying the Member it adds or removes in its
// Context, so that every node (and every observer, which receives the same
// entries) knows each voter's directory id and endpoints. A snapshot records
// the membership in front of the state machine's bytes (a membership
// envelope), so a node restored from one knows it too.
//
// A new voter joins in two steps, as Raft's learners were made for: first
// it is added as a learner, which receives the log but neither votes nor
// counts towards a commit; once its log has caught up with the leader's
// commit index it is promoted to a voter. Adding a voter that is far behind
// would otherwise stall every commit that needs it in the new majority.

// Errors of membership changes, mapped to Kafka's error codes by the API
// layer.
var (
	// ErrStaticQuorum: controller.quorum.voters fixes the voters (Kafka's
	// kraft.version 0): UNSUPPORTED_VERSION.
	ErrStaticQuorum = errors.New("the controller quorum is static (controller.quorum.voters); voters cannot change")
	// ErrChangePending: a membership change is under way, or the leader has
	// not committed an entry of its own term yet: REQUEST_TIMED_OUT, retry.
	ErrChangePending = errors.New("a quorum membership change is in progress")
	// ErrDuplicateVoter: DUPLICATE_VOTER.
	ErrDuplicateVoter = errors.New("the node is already a voter")
	// ErrVoterNotFound: VOTER_NOT_FOUND.
	ErrVoterNotFound = errors.New("no such voter")
	// ErrInvalidChange: INVALID_REQUEST (removing the last voter, a
	// member without endpoints).
	ErrInvalidChange = errors.New("invalid quorum membership change")
	// ErrChangeAborted: the caller gave up waiting (REQUEST_TIMED_OUT).
	ErrChangeAborted = errors.New("quorum membership change timed out")
)

// Listener is one endpoint of a controller, as AddRaftVoter carries it.
type Listener struct {
	Name string `json:"name"`
	Host string `json:"host"`
	Port uint16 `json:"port"`
}

// Member is one node of the quorum: its Kafka node id, the directory id of
// its metadata log directory (KIP-858's directory.id), and its controller
// endpoints. The directory id tells a replaced disk from the old one: a
// voter is removed by (id, directory id).
type Member struct {
	NodeID      int32      `json:"id"`
	DirectoryID [16]byte   `json:"dir"`
	Listeners   []Listener `json:"listeners,omitempty"`
}

// Limits on a member record, checked before it is ever proposed.
const (
	maxMemberListeners = 16
	maxMemberNameBytes = 256
)

func (m Member) validate() error {
	if m.NodeID < 0 {
		return fmt.Errorf("%w: node id %d", ErrInvalidChange, m.NodeID)
	}
	if len(m.Listeners) == 0 || len(m.Listeners) > maxMemberListeners {
		return fmt.Errorf("%w: %d listeners, want 1 to %d", ErrInvalidChange, len(m.Listeners), maxMemberListeners)
	}
	for _, l := range m.Listeners {
		if l.Name == "" || l.Host == "" || l.Port == 0 || len(l.Name) > maxMemberNameBytes || len(l.Host) > maxMemberNameBytes {
			return fmt.Errorf("%w: listener %+v", ErrInvalidChange, l)
		}
	}
	return nil
}

// Membership is the quorum's configuration: who votes, who is catching up
// (learners, shown as observers), each with its endpoints when known.
type Membership struct {
	Dynamic  bool
	Voters   []Member
	Learners []Member
}

// Voter returns the voter with id, if any.
func (m Membership) Voter(id int32) (Member, bool) {
	i := slices.IndexFunc(m.Voters, func(v Member) bool { return v.NodeID == id })
	if i < 0 {
		return Member{}, false
	}
	return m.Voters[i], true
}

// members is the Core's view: the Member records by Raft id. In a static
// quorum they carry node ids only (endpoints are configuration).
type members map[uint64]Member

func (ms members) membership(cs *raftpb.ConfState, dynamic bool) Membership {
	pick := func(ids []uint64) []Member {
		out := make([]Member, 0, len(ids))
		for _, id := range slices.Sorted(slices.Values(ids)) {
			m, ok := ms[id]
			if !ok {
				m = Member{NodeID: NodeID(id)}
			}
			out = append(out, m)
		}
		return out
	}
	return Membership{Dynamic: dynamic, Voters: pick(cs.GetVoters()), Learners: pick(cs.GetLearners())}
}

// encodeMember is a conf change's Context.
func encodeMember(m Member) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode member %d: %w", m.NodeID, err)
	}
	return b, nil
}

func decodeMember(b []byte) (Member, error) {
	var m Member
	if err := json.Unmarshal(b, &m); err != nil {
		return Member{}, fmt.Errorf("%w: member record: %v", ErrCorruptState, err)
	}
	return m, nil
}

// membershipMagic opens a snapshot that carries a membership envelope. A
// static quorum's snapshots have none (their bytes are the state machine's
// alone, as before dynamic membership existed).
var membershipMagic = []byte("\x00SKQM\x01")

// maxEnvelopeMembers bounds the members a snapshot envelope may list.
const maxEnvelopeMembers = 2 * maxVoters

// envelope is what a snapshot records of the membership.
type envelope struct {
	Voters   []Member `json:"voters"`
	Learners []Member `json:"learners,omitempty"`
}

// wrapSnapshot puts the membership in front of the state machine's bytes.
func wrapSnapshot(ms Membership, data []byte) ([]byte, error) {
	head, err := json.Marshal(envelope{Voters: ms.Voters, Learners: ms.Learners})
	if err != nil {
		return nil, fmt.Errorf("encode snapshot membership: %w", err)
	}
	out := make([]byte, 0, len(membershipMagic)+4+len(head)+len(data))
	out = append(out, membershipMagic...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(head)))
	out = append(out, head...)
	return append(out, data...), nil
}

// hasMembership reports whether snapshot bytes carry a membership
// envelope (a dynamic quorum's, or an upgraded static one's).
func hasMembership(data []byte) bool { return bytes.HasPrefix(data, membershipMagic) }

// UnwrapSnapshot splits a snapshot's bytes into the membership it records
// (nil without an envelope: a static quorum's) and the state machine's
// bytes.
func UnwrapSnapshot(data []byte) (*Membership, []byte, error) {
	if !hasMembership(data) {
		return nil, data, nil
	}
	rest := data[len(membershipMagic):]
	if len(rest) < 4 {
		return nil, nil, fmt.Errorf("%w: snapshot membership envelope truncated", ErrCorruptState)
	}
	n := binary.BigEndian.Uint32(rest)
	rest = rest[4:]
	if uint64(n) > uint64(len(rest)) {
		return nil, nil, fmt.Errorf("%w: snapshot membership of %d bytes, %d left", ErrCorruptState, n, len(rest))
	}
	var env envelope
	if err := json.Unmarshal(rest[:n], &env); err != nil {
		return nil, nil, fmt.Errorf("%w: snapshot membership: %v", ErrCorruptState, err)
	}
	if len(env.Voters)+len(env.Learners) > maxEnvelopeMembers {
		return nil, nil, fmt.Errorf("%w: snapshot lists %d members", ErrCorruptState, len(env.Voters)+len(env.Learners))
	}
	return &Membership{Dynamic: true, Voters: env.Voters, Learners: env.Learners}, rest[n:], nil
}

// recordsOf indexes a membership's records by Raft id, with its
// configuration.
func recordsOf(m *Membership) (members, *raftpb.ConfState) {
	ms, cs := members{}, &raftpb.ConfState{}
	for _, v := range m.Voters {
		ms[RaftID(v.NodeID)] = v
		cs.Voters = append(cs.Voters, RaftID(v.NodeID))
	}
	for _, l := range m.Learners {
		ms[RaftID(l.NodeID)] = l
		cs.Learners = append(cs.Learners, RaftID(l.NodeID))
	}
	return ms, cs
}

// applyChange updates a Membership for one committed change, as an
// observer follows it.
func (m *Membership) applyChange(cc *raftpb.ConfChangeV2, rec Member) {
	drop := func(list []Member) []Member {
		return slices.DeleteFunc(list, func(x Member) bool { return x.NodeID == rec.NodeID })
	}
	m.Voters, m.Learners = drop(m.Voters), drop(m.Learners)
	byID := func(a, b Member) int { return int(a.NodeID) - int(b.NodeID) }
	switch cc.GetChanges()[0].GetType() {
	case raftpb.ConfChangeAddNode:
		m.Voters = append(m.Voters, rec)
		slices.SortFunc(m.Voters, byID)
	case raftpb.ConfChangeAddLearnerNode:
		m.Learners = append(m.Learners, rec)
		slices.SortFunc(m.Learners, byID)
	}
}

// confChangeMember decodes a committed configuration change: its one
// single-step change and the Member it concerns.
func confChangeMember(e *raftpb.Entry) (*raftpb.ConfChangeV2, Member, error) {
	var cc raftpb.ConfChangeV2
	if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
		return nil, Member{}, fmt.Errorf("%w: conf change at index %d: %v", ErrCorruptState, e.GetIndex(), err)
	}
	if len(cc.GetChanges()) != 1 {
		return nil, Member{}, fmt.Errorf("%w: conf change at index %d has %d changes, expected 1", ErrCorruptState, e.GetIndex(), len(cc.GetChanges()))
	}
	m, err := decodeMember(cc.GetContext())
	if err != nil {
		return nil, Member{}, err
	}
	if RaftID(m.NodeID) != cc.GetChanges()[0].GetNodeId() {
		return nil, Member{}, fmt.Errorf("%w: conf change at index %d for raft id %d carries member %d", ErrCorruptState, e.GetIndex(), cc.GetChanges()[0].GetNodeId(), m.NodeID)
	}
	return &cc, m, nil
}

// applyToMembers updates the member records for one change.
func applyToMembers(ms members, cc *raftpb.ConfChangeV2, m Member) {
	id := cc.GetChanges()[0].GetNodeId()
	switch cc.GetChanges()[0].GetType() {
	case raftpb.ConfChangeAddNode, raftpb.ConfChangeAddLearnerNode:
		ms[id] = m
	case raftpb.ConfChangeRemoveNode:
		delete(ms, id)
	}
}

func newConfChange(t raftpb.ConfChangeType, m Member) (*raftpb.ConfChangeV2, error) {
	ctx, err := encodeMember(m)
	if err != nil {
		return nil, err
	}
	return &raftpb.ConfChangeV2{
		// Explicit: one change at a time needs no joint configuration.
		Transition: raftpb.ConfChangeTransitionAuto.Enum(),
		Changes:    []*raftpb.ConfChangeSingle{{Type: t.Enum(), NodeId: new(RaftID(m.NodeID))}},
		Context:    ctx,
	}, nil
}
