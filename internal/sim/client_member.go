package sim

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/records"
)

// Group members run the classic consumer protocol through the api
// handlers, as a Kafka consumer does: FindCoordinator, JoinGroup (v5, so
// a new dynamic member first gets MEMBER_ID_REQUIRED), SyncGroup with a
// range assignment made by the leader member, Heartbeat, OffsetFetch of
// the assigned partitions, Fetch, and OffsetCommit of what they consumed.
// They rejoin on REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID and
// ILLEGAL_GENERATION, look for the coordinator again on NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE or a lost request, and crash and restart
// (losing their member id) while faults run. One is static
// (group.instance.id).

const (
	memberGroup            = "sim-group"
	groupMembers           = 3
	memberSessionTimeout   = 1500 * time.Millisecond
	memberRebalanceTimeout = 3 * time.Second
	memberHeartbeatEvery   = 300 * time.Millisecond
	memberCrashChance      = 0.002 // per loop turn (~every 50ms) while faults run
)

type memberPhase int8

const (
	memberUnjoined memberPhase = iota
	memberJoining
	memberSyncing
	memberStable
)

type groupMember struct {
	c          *Cluster
	index      int
	self       int32
	instanceID string // "" for a dynamic member
	lc         *leaderCache

	up          bool
	incarnation int // bumped by every crash: answers to a dead incarnation are dropped
	coord       int32
	finding     bool
	phase       memberPhase
	memberID    string
	generation  int32
	synced      int32 // highest generation this incarnation synced in; never decreases (a member rejoining a Stable group with unchanged metadata gets the same one back)
	assigned    []int32
	// syncedAs is the member id synced was recorded for: generations only
	// grow for one member id (a removed group starts over at 1).
	syncedAs string
	// positions is nil until the committed offsets of the assignment are
	// fetched; then the next offset to consume per assigned partition.
	positions   map[int32]int64
	fetchingPos bool
	busy        map[int32]bool
	committing  bool
	// committed is what this member last committed, so that it commits
	// only what changed (and the offsets log goes quiet once it has).
	committed     map[int32]int64
	heartbeating  bool
	lastHeartbeat time.Duration
}

func (c *Cluster) newGroupMembers() []client {
	var out []client
	for i := range groupMembers {
		id := int32(clientEndpointBase + 300 + i)
		m := &groupMember{c: c, index: i, self: id, up: true, coord: -1,
			lc: &leaderCache{c: c, self: id, leaders: map[int32]int32{}, topic: topicName}, busy: map[int32]bool{}}
		if i == groupMembers-1 {
			m.instanceID = fmt.Sprintf("static-%d", i)
		}
		c.members = append(c.members, m)
		out = append(out, m)
	}
	return out
}

func (m *groupMember) start() { m.c.s.after(m.c.s.between(time.Second, 2*time.Second), m.loop) }

func (m *groupMember) tracef(format string, args ...any) {
	m.c.tracef("member %d (%s gen %d) %s", m.index, m.memberID, m.generation, fmt.Sprintf(format, args...))
}

// key names the member in the checker: its instance id if static.
func (m *groupMember) key() string {
	if m.instanceID != "" {
		return m.instanceID
	}
	return m.memberID
}

func (m *groupMember) loop() {
	c := m.c
	if c.stopped {
		return
	}
	c.s.after(c.s.between(20*time.Millisecond, 80*time.Millisecond), m.loop)
	if !m.up {
		return
	}
	if !c.healed && c.opts.Faults.Every > 0 && c.s.chance(memberCrashChance) {
		if m.instanceID == "" && m.memberID != "" && m.coord >= 0 && c.s.chance(0.5) {
			m.leave()
		}
		m.crash()
		return
	}
	if m.coord < 0 {
		m.findCoordinator()
		return
	}
	switch m.phase {
	case memberUnjoined:
		m.join()
	case memberStable:
		if c.s.now-m.lastHeartbeat >= memberHeartbeatEvery && !m.heartbeating {
			m.heartbeat()
		}
		if m.positions == nil {
			m.fetchPositions()
			return
		}
		if len(m.assigned) > 0 {
			m.fetch(m.assigned[c.s.rng.IntN(len(m.assigned))])
		}
		if !m.committing && !maps.Equal(m.committed, m.positions) && c.s.chance(0.1) {
			m.commit()
		}
	}
}

// crash loses everything the process held; it comes back later as a new
// dynamic member (the static one keeps its instance id).
func (m *groupMember) crash() {
	m.tracef("crashes")
	m.c.check.stats.MemberCrashes++
	m.up = false
	m.incarnation++
	m.reset()
	m.memberID = ""
	m.coord = -1
	m.finding = false
	m.synced = 0
	m.c.s.after(m.c.s.between(300*time.Millisecond, 3*time.Second), m.restart)
}

// leave is a dynamic member's LeaveGroup on shutdown, sent without waiting
// for the answer (a static member does not leave: its instance id keeps
// its place until the session times out).
func (m *groupMember) leave() {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 3
	req.Group = memberGroup
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = m.memberID
	req.Members = append(req.Members, lm)
	m.tracef("leaves")
	m.c.call(m.self, m.coord, req, rpcTimeout, func(kmsg.Response, error) {})
}

func (m *groupMember) restart() {
	if m.up {
		return
	}
	m.up = true
	m.tracef("restarts")
}

// reset drops the assignment and everything in flight; the member joins
// again on its next turn.
func (m *groupMember) reset() {
	m.phase = memberUnjoined
	m.assigned, m.positions, m.committed = nil, nil, nil
	m.generation = -1
	m.fetchingPos, m.committing, m.heartbeating = false, false, false
	clear(m.busy)
}

// rejoin is the answer to an error from the coordinator.
func (m *groupMember) rejoin(err error, op string) {
	switch {
	case errors.Is(err, kerr.RebalanceInProgress), errors.Is(err, kerr.IllegalGeneration):
	case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.FencedInstanceID):
		m.memberID = ""
	case errors.Is(err, kerr.NotCoordinator), errors.Is(err, kerr.CoordinatorNotAvailable), errors.Is(err, errTimeout):
		m.coord = -1
		if m.phase == memberStable {
			// Keep the assignment: the new coordinator loads the group
			// and the next heartbeat says whether it still stands.
			m.tracef("%s failed (%v); looking for the coordinator", op, err)
			return
		}
	case errors.Is(err, kerr.CoordinatorLoadInProgress):
		if m.phase == memberStable {
			return
		}
	}
	m.tracef("%s failed (%v); joining again", op, err)
	m.reset()
}

func (m *groupMember) call(req kmsg.Request, timeout time.Duration, cb func(kmsg.Response, error)) {
	inc := m.incarnation
	if m.coord < 0 {
		m.c.s.after(0, func() {
			if m.incarnation == inc {
				cb(nil, kerr.CoordinatorNotAvailable)
			}
		})
		return
	}
	m.c.call(m.self, m.coord, req, timeout, func(resp kmsg.Response, err error) {
		if m.incarnation == inc {
			cb(resp, err)
		}
	})
}

func (m *groupMember) findCoordinator() {
	if m.finding {
		return
	}
	m.finding = true
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 3
	req.CoordinatorKey = memberGroup
	to := m.c.ids[m.c.s.rng.IntN(len(m.c.ids))]
	inc := m.incarnation
	m.c.call(m.self, to, req, rpcTimeout, func(resp kmsg.Response, err error) {
		if m.incarnation != inc {
			return
		}
		m.finding = false
		if err != nil {
			return
		}
		if r := resp.(*kmsg.FindCoordinatorResponse); r.ErrorCode == 0 {
			m.coord = r.NodeID
		}
	})
}

func (m *groupMember) join() {
	m.phase = memberJoining
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 5
	req.Group = memberGroup
	req.SessionTimeoutMillis = int32(memberSessionTimeout.Milliseconds())
	req.RebalanceTimeoutMillis = int32(memberRebalanceTimeout.Milliseconds())
	req.MemberID = m.memberID
	if m.instanceID != "" {
		req.InstanceID = kmsg.StringPtr(m.instanceID)
	}
	req.ProtocolType = "consumer"
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{topicName}
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", meta.AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	m.call(req, memberRebalanceTimeout+rpcTimeout, func(resp kmsg.Response, err error) {
		if m.phase != memberJoining {
			return
		}
		if err == nil {
			r := resp.(*kmsg.JoinGroupResponse)
			if err = kerr.ErrorForCode(r.ErrorCode); errors.Is(err, kerr.MemberIDRequired) {
				m.memberID = r.MemberID
				m.phase = memberUnjoined
				return
			}
			if err == nil {
				m.memberID, m.generation = r.MemberID, r.Generation
				m.tracef("joined, leader %s, %d members", r.LeaderID, len(r.Members))
				m.sync(r)
				return
			}
		}
		m.rejoin(err, "join")
	})
}

// rangeAssign gives each member (sorted by id) a contiguous run of
// partitions, the first ones one more when they do not divide evenly.
func rangeAssign(members []string, partitions int) map[string][]int32 {
	members = slices.Sorted(slices.Values(members))
	out := map[string][]int32{}
	per, extra := partitions/len(members), partitions%len(members)
	next := int32(0)
	for i, id := range members {
		n := per
		if i < extra {
			n++
		}
		parts := []int32{}
		for range n {
			parts = append(parts, next)
			next++
		}
		out[id] = parts
	}
	return out
}

func (m *groupMember) sync(join *kmsg.JoinGroupResponse) {
	m.phase = memberSyncing
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 3
	req.Group = memberGroup
	req.Generation = m.generation
	req.MemberID = m.memberID
	if m.instanceID != "" {
		req.InstanceID = kmsg.StringPtr(m.instanceID)
	}
	leaderOf := 0
	if join.LeaderID == m.memberID {
		ids := make([]string, len(join.Members))
		for i, mem := range join.Members {
			ids[i] = mem.MemberID
		}
		leaderOf = len(ids)
		for _, id := range slices.Sorted(slices.Values(ids)) {
			a := kmsg.NewConsumerMemberAssignment()
			t := kmsg.NewConsumerMemberAssignmentTopic()
			t.Topic, t.Partitions = topicName, rangeAssign(ids, m.c.opts.Partitions)[id]
			a.Topics = append(a.Topics, t)
			ga := kmsg.NewSyncGroupRequestGroupAssignment()
			ga.MemberID, ga.MemberAssignment = id, a.AppendTo(nil)
			req.GroupAssignment = append(req.GroupAssignment, ga)
		}
	}
	gen, leader := m.generation, join.LeaderID
	m.call(req, memberRebalanceTimeout+rpcTimeout, func(resp kmsg.Response, err error) {
		if m.phase != memberSyncing || m.generation != gen {
			return
		}
		var r *kmsg.SyncGroupResponse
		if err == nil {
			r = resp.(*kmsg.SyncGroupResponse)
			err = kerr.ErrorForCode(r.ErrorCode)
		}
		if err != nil {
			m.rejoin(err, "sync")
			return
		}
		var parts []int32
		if len(r.MemberAssignment) > 0 {
			a := kmsg.NewConsumerMemberAssignment()
			if err := a.ReadFrom(r.MemberAssignment); err != nil {
				m.c.violation("member %d: unreadable assignment in generation %d: %v", m.index, gen, err)
				return
			}
			for _, t := range a.Topics {
				parts = append(parts, t.Partitions...)
			}
		}
		slices.Sort(parts)
		if m.syncedAs != m.memberID {
			m.synced, m.syncedAs = 0, m.memberID
		}
		if gen < m.synced {
			m.c.violation("member %d (%s): synced in generation %d after generation %d", m.index, m.memberID, gen, m.synced)
		}
		m.synced = gen
		m.phase, m.assigned, m.positions = memberStable, parts, nil
		m.lastHeartbeat = m.c.s.now
		m.tracef("synced, assigned %v", parts)
		m.c.check.memberSynced(m.key(), generationID{gen, leader}, parts, leaderOf)
	})
}

// stableCall sends a request that belongs to the current generation and
// drops its answer if the member has moved on since.
func (m *groupMember) stableCall(req kmsg.Request, timeout time.Duration, cb func(kmsg.Response, error)) {
	gen := m.generation
	m.call(req, timeout, func(resp kmsg.Response, err error) {
		if m.phase == memberStable && m.generation == gen {
			cb(resp, err)
		}
	})
}

func (m *groupMember) heartbeat() {
	m.heartbeating = true
	m.lastHeartbeat = m.c.s.now
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 3
	req.Group, req.Generation, req.MemberID = memberGroup, m.generation, m.memberID
	if m.instanceID != "" {
		req.InstanceID = kmsg.StringPtr(m.instanceID)
	}
	m.stableCall(req, rpcTimeout, func(resp kmsg.Response, err error) {
		m.heartbeating = false
		if err == nil {
			err = kerr.ErrorForCode(resp.(*kmsg.HeartbeatResponse).ErrorCode)
		}
		if err != nil {
			m.rejoin(err, "heartbeat")
		}
	})
}

func (m *groupMember) fetchPositions() {
	if m.fetchingPos {
		return
	}
	m.fetchingPos = true
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = memberGroup
	t := kmsg.NewOffsetFetchRequestTopic()
	t.Topic, t.Partitions = topicName, slices.Clone(m.assigned)
	req.Topics = append(req.Topics, t)
	m.stableCall(req, rpcTimeout, func(resp kmsg.Response, err error) {
		m.fetchingPos = false
		var r *kmsg.OffsetFetchResponse
		if err == nil {
			r = resp.(*kmsg.OffsetFetchResponse)
			err = kerr.ErrorForCode(r.ErrorCode)
		}
		if err != nil {
			m.rejoin(err, "offset fetch")
			return
		}
		pos := map[int32]int64{}
		for _, p := range m.assigned {
			pos[p] = 0
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					m.rejoin(kerr.ErrorForCode(p.ErrorCode), "offset fetch")
					return
				}
				if _, ok := pos[p.Partition]; ok && t.Topic == topicName && p.Offset >= 0 {
					pos[p.Partition] = p.Offset
				}
			}
		}
		m.positions, m.committed = pos, maps.Clone(pos)
		m.tracef("resumes at %v", pos)
	})
}

func (m *groupMember) commit() {
	if len(m.assigned) == 0 {
		return
	}
	m.committing = true
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 7
	req.Group, req.Generation, req.MemberID = memberGroup, m.generation, m.memberID
	if m.instanceID != "" {
		req.InstanceID = kmsg.StringPtr(m.instanceID)
	}
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topicName
	offsets := map[int32]int64{}
	for _, part := range m.assigned {
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch = part, m.positions[part], -1
		offsets[part] = p.Offset
		t.Partitions = append(t.Partitions, p)
	}
	req.Topics = append(req.Topics, t)
	coord := m.coord
	m.stableCall(req, groupWriteTimeout+rpcTimeout, func(resp kmsg.Response, err error) {
		m.committing = false
		if err == nil {
			for _, t := range resp.(*kmsg.OffsetCommitResponse).Topics {
				for _, p := range t.Partitions {
					if err == nil {
						err = kerr.ErrorForCode(p.ErrorCode)
					}
				}
			}
		}
		if err != nil {
			m.rejoin(err, "commit")
			return
		}
		m.committed = offsets
		for _, part := range sortedKeys(offsets) {
			m.c.check.groupCommitAcked(memberGroup, part, offsets[part], coord)
		}
	})
}

func (m *groupMember) fetch(part int32) {
	c := m.c
	if m.busy[part] {
		return
	}
	leader, ok := m.lc.leader(part)
	if !ok {
		m.lc.refresh()
		return
	}
	req := consumerFetch(part, m.positions[part])
	m.busy[part] = true
	from := m.positions[part]
	gen, inc := m.generation, m.incarnation
	c.call(m.self, leader, req, rpcTimeout, func(resp kmsg.Response, err error) {
		if m.incarnation != inc || m.generation != gen || m.phase != memberStable || m.positions == nil {
			return
		}
		m.busy[part] = false
		if err != nil {
			m.lc.forget(part)
			return
		}
		r := resp.(*kmsg.FetchResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return
		}
		rp := r.Topics[0].Partitions[0]
		if rp.ErrorCode != 0 {
			m.lc.forget(part)
			return
		}
		if m.positions[part] == from {
			m.consume(part, rp.RecordBatches, leader)
		}
	})
}

func (m *groupMember) consume(part int32, data []byte, leader int32) {
	c := m.c
	err := batch.Split(data, func(b []byte) error {
		h, recs, err := records.Decode(b, 1<<20)
		if err != nil {
			return err
		}
		for _, r := range recs {
			off := r.Offset(h)
			if off < m.positions[part] {
				continue
			}
			if off != m.positions[part] {
				c.violation("member %d: partition %d from n%d: offset %d follows %d", m.index, part, leader, off, m.positions[part]-1)
				return errors.New("gap")
			}
			c.check.consumed(part, off, string(r.Value), leader)
			c.check.memberConsumed(part, off)
			m.positions[part] = off + 1
		}
		return nil
	})
	if err != nil && !errors.Is(err, batch.ErrTruncated) && !c.stopped {
		c.violation("member %d: partition %d from n%d: bad batch: %v", m.index, part, leader, err)
	}
}

// groupConvergence says why the members' group is not settled yet: after
// healing, it must come to Stable with every member in one generation.
func (c *Cluster) groupConvergence(ctl *process) string {
	t, ok := ctl.image.Topic(offsetsTopic)
	if !ok {
		return offsetsTopic + " not created"
	}
	st := t.Partitions[group.PartitionFor(memberGroup, int32(len(t.Partitions)))]
	h, err := groupHosts{c.nodes[st.Leader].proc}.For(memberGroup)
	if err != nil {
		return fmt.Sprintf("group %s: no coordinator on n%d (%v)", memberGroup, st.Leader, err)
	}
	d := h.(*coordinator).host.Coordinator().DescribeGroup(memberGroup)
	if d.State != group.Stable || len(d.Members) != len(c.members) {
		return fmt.Sprintf("group %s: %s generation %d with %d of %d members", memberGroup, d.State, d.Generation, len(d.Members), len(c.members))
	}
	for _, m := range c.members {
		if !m.up || m.phase != memberStable || m.generation != d.Generation || m.positions == nil {
			return fmt.Sprintf("group %s: member %d not stable in generation %d", memberGroup, m.index, d.Generation)
		}
	}
	return ""
}
