package group

import (
	"math"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// consumerProtocolType is the protocol type of Kafka consumers; only its
// member metadata (the subscription) is understood here.
const consumerProtocolType = "consumer"

// noDeadline marks "no timer".
const noDeadline = math.MaxInt64

// Group is one consumer group. It is only reached through its Coordinator.
type Group struct {
	coord *Coordinator
	id    string

	state      State
	stateSince int64 // when state was entered (KIP-211 expires from here)
	generation int32
	// protocolType is set by the first member and kept while the group is
	// empty, as Kafka does: offset expiry depends on it.
	protocolType string
	protocolName string
	leader       string

	members  map[string]*member
	static   map[string]string // group.instance.id -> member id
	pending  map[string]int64  // ids handed out with MEMBER_ID_REQUIRED -> expiry
	joinSeq  uint64
	awaiting int // members with a parked JoinGroup
	// votes counts, per protocol name, the members supporting it, so the
	// protocols every member supports are those with votes == len(members).
	votes map[string]int

	// Rebalance timing: the join phase ends at joinDeadline; in the first
	// rebalance of an empty group (initialDelay) it is extended while new
	// members arrive, by at most initialRemaining in total.
	joinDeadline     int64
	initialDelay     bool
	initialRemaining int64
	newMemberAdded   bool

	// Members that got this generation's JoinGroup answer but have not sent
	// SyncGroup; they are removed at syncDeadline.
	pendingSync  map[string]struct{}
	syncDeadline int64
	// assigning is the leader's assignment while its record is being
	// written (nil otherwise); the group stays CompletingRebalance meanwhile.
	assigning *pendingAssignment

	// subscribed is the union of the members' subscribed topics when the
	// group is a consumer group whose metadata parsed; nil when unknown.
	subscribed map[string]struct{}

	offsets map[TopicPartition]offsetEntry
	// txnOffsets are offsets committed in transactions that have not
	// ended yet, by producer id (TxnOffsetCommit): not visible until the
	// producer's COMMIT marker, dropped at its ABORT (Kafka's
	// pendingTransactionalOffsetCommits).
	txnOffsets map[int64]map[TopicPartition]offsetEntry

	// persisted is true once a group metadata record has been written or
	// loaded: removing the group then needs a tombstone.
	persisted bool

	// timerAt is the deadline the coordinator's timer heap holds for us.
	timerAt int64
}

func newGroup(c *Coordinator, id string, now int64) *Group {
	return &Group{
		coord:       c,
		id:          id,
		state:       Empty,
		stateSince:  now,
		members:     make(map[string]*member),
		static:      make(map[string]string),
		pending:     make(map[string]int64),
		votes:       make(map[string]int),
		pendingSync: make(map[string]struct{}),
		offsets:     make(map[TopicPartition]offsetEntry),
		txnOffsets:  make(map[int64]map[TopicPartition]offsetEntry),
		timerAt:     noDeadline,
	}
}

func (g *Group) transition(s State, now int64) {
	g.state = s
	g.stateSince = now
}

// orderedMembers lists members in join order.
func (g *Group) orderedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].joinSeq < ms[j].joinSeq })
	return ms
}

// add puts m in the group; the first member sets the protocol type.
func (g *Group) add(m *member, protocolType string) {
	if len(g.members) == 0 {
		g.protocolType = protocolType
	}
	g.joinSeq++
	m.joinSeq = g.joinSeq
	g.members[m.id] = m
	if m.instanceID != "" {
		g.static[m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.addVotes(m, 1)
}

func (g *Group) addVotes(m *member, delta int) {
	seen := make(map[string]bool, len(m.protocols))
	for _, p := range m.protocols {
		if seen[p.Name] { // a duplicate name must not count twice
			continue
		}
		seen[p.Name] = true
		g.votes[p.Name] += delta
		if g.votes[p.Name] <= 0 {
			delete(g.votes, p.Name)
		}
	}
}

func (g *Group) setProtocols(m *member, req JoinRequest, now int64) {
	g.addVotes(m, -1)
	m.update(now, req)
	g.addVotes(m, 1)
}

// remove drops a member without touching the group's state; parked
// requests must have been answered by the caller.
func (g *Group) remove(id string) {
	m := g.members[id]
	if m == nil {
		return
	}
	g.addVotes(m, -1)
	if m.joinWaiting {
		g.awaiting--
	}
	delete(g.members, id)
	delete(g.pendingSync, id)
	if m.instanceID != "" && g.static[m.instanceID] == id {
		delete(g.static, m.instanceID)
	}
	if g.leader == id {
		g.leader = ""
		if ms := g.orderedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

func (g *Group) parkJoin(m *member, req RequestID, out *Output) {
	if m.joinWaiting {
		// A second JoinGroup while one is parked: the client gave up on the
		// first. Answer it anyway, since the runtime needs every request
		// answered to keep a connection's answers in order.
		out.joinError(m.joinReq, m.id, kerr.RebalanceInProgress)
	} else {
		g.awaiting++
	}
	m.joinWaiting, m.joinReq = true, req
}

func (g *Group) answerJoin(m *member, r JoinResponse, out *Output) {
	if !m.joinWaiting {
		return
	}
	out.join(m.joinReq, r)
	m.joinWaiting = false
	g.awaiting--
}

func (g *Group) parkSync(m *member, req RequestID, out *Output) {
	if m.syncWaiting {
		out.sync(m.syncReq, SyncResponse{Err: kerr.RebalanceInProgress})
	}
	m.syncWaiting, m.syncReq = true, req
}

func (g *Group) answerSync(m *member, r SyncResponse, out *Output) {
	if !m.syncWaiting {
		return
	}
	out.sync(m.syncReq, r)
	m.syncWaiting = false
}

// failParked answers a member's parked requests with err.
func (g *Group) failParked(m *member, err error, out *Output) {
	g.answerJoin(m, JoinResponse{Err: err, MemberID: m.id, Generation: -1}, out)
	g.answerSync(m, SyncResponse{Err: err}, out)
}

// supportsProtocols is Kafka's check that a joining member can be in the
// group: an empty group takes any non-empty protocol type and list;
// otherwise the type must match and one of the member's protocols must be
// supported by every current member.
func (g *Group) supportsProtocols(protocolType string, ps []Protocol) bool {
	if protocolType == "" || len(ps) == 0 {
		return false
	}
	if len(g.members) == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range ps {
		if g.votes[p.Name] == len(g.members) {
			return true
		}
	}
	return false
}

// selectProtocol picks the generation's protocol: each member votes for
// its most preferred protocol among those all members support; most votes
// wins, ties go to the earliest in the leader's order. "" if none.
func (g *Group) selectProtocol() string {
	ballots := make(map[string]int)
	for _, m := range g.members {
		for _, p := range m.protocols {
			if g.votes[p.Name] == len(g.members) {
				ballots[p.Name]++
				break
			}
		}
	}
	order := g.orderedMembers()
	if l := g.members[g.leader]; l != nil {
		order = append([]*member{l}, order...)
	}
	best, bestVotes := "", 0
	for _, m := range order {
		for _, p := range m.protocols {
			if n := ballots[p.Name]; n > bestVotes {
				best, bestVotes = p.Name, n
			}
		}
	}
	return best
}

// rebalanceTimeout is the longest rebalance timeout over members: the
// rebalance must give the slowest member time to rejoin.
func (g *Group) rebalanceTimeout() int64 {
	var t int64
	for _, m := range g.members {
		t = max(t, m.rebalanceTimeoutMs)
	}
	return t
}

func (g *Group) allJoined() bool {
	return g.awaiting == len(g.members) && len(g.pending) == 0
}

// joinMembers is the member list the leader receives to assign from.
func (g *Group) joinMembers() []JoinMember {
	ms := g.orderedMembers()
	out := make([]JoinMember, 0, len(ms))
	for _, m := range ms {
		out = append(out, JoinMember{MemberID: m.id, InstanceID: m.instanceID, Metadata: m.metadataFor(g.protocolName)})
	}
	return out
}

// validateMember checks the identity a member presents: a static member
// must present its instance's current id (an older id is a fenced zombie).
func (g *Group) validateMember(instanceID, memberID string) error {
	if instanceID != "" {
		id, ok := g.static[instanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID
		case id != memberID:
			return kerr.FencedInstanceID
		}
		return nil
	}
	if g.members[memberID] == nil {
		return kerr.UnknownMemberID
	}
	return nil
}

// full reports whether another member would pass group.max.size.
func (g *Group) full() bool {
	return len(g.members)+len(g.pending) >= g.coord.cfg.MaxSize
}

// nextDeadline is the earliest time Tick has something to do for g.
func (g *Group) nextDeadline() int64 {
	d := int64(noDeadline)
	for _, at := range g.pending {
		d = min(d, at)
	}
	for _, m := range g.members {
		if at, ok := m.sessionDeadline(); ok {
			d = min(d, at)
		}
	}
	if g.state == PreparingRebalance {
		d = min(d, g.joinDeadline)
	}
	if len(g.pendingSync) > 0 && (g.state == CompletingRebalance || g.state == Stable) {
		d = min(d, g.syncDeadline)
	}
	return d
}

// computeSubscribed derives the subscribed topics of a consumer group from
// its members' metadata for the selected protocol; nil when unknown.
func (g *Group) computeSubscribed() {
	g.subscribed = nil
	if g.protocolType != consumerProtocolType || g.protocolName == "" {
		return
	}
	topics := make(map[string]struct{})
	for _, m := range g.members {
		ts, err := subscriptionTopics(m.metadataFor(g.protocolName))
		if err != nil {
			return
		}
		for _, t := range ts {
			topics[t] = struct{}{}
		}
	}
	g.subscribed = topics
}

func (g *Group) sortedPending() []string {
	ids := make([]string, 0, len(g.pending))
	for id := range g.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
