package sim

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/group"
)

// groupChecks is the checker's state for consumer groups.
type generationID struct {
	generation int32
	leader     string
}

type groupPart struct {
	group string
	part  int32
}

type groupChecks struct {
	// acked is, per group and partition of the data topic, the highest
	// offset whose commit was acknowledged.
	acked map[string]map[int32]int64
	// delivered is, per group and partition, the highest offset a commit
	// request that reached a broker carried; late is the offset of one
	// that arrived after a higher one (a duplicated or delayed copy),
	// until a higher one arrives again: OffsetCommit is last-arrival-wins in
	// Kafka, so the coordinator may rightly hold it until a newer commit
	// arrives. Found by seed 807 once the swarm ran the transaction
	// coordinator: a copy of OffsetCommit(8) arrived after
	// OffsetCommit(9) was answered.
	delivered, late map[groupPart]int64
	// synced is, per generation of the members' group (a generation
	// number and its leader's member id: a removed group starts over at
	// generation 1, with new member ids), what each member (by instance id
	// if static, else member id) was assigned by a successful SyncGroup;
	// size is the member count the leader assigned for, once its own sync
	// succeeded.
	synced map[generationID]map[string][]int32
	size   map[generationID]int
	// committedGeneration is the generation in the newest committed
	// metadata record of the members' group (0 after its tombstone).
	committedGeneration int32
	// consumed is, per partition, every offset a group member consumed.
	consumed map[int32]map[int64]bool
}

func newGroupChecks() groupChecks {
	return groupChecks{acked: map[string]map[int32]int64{}, delivered: map[groupPart]int64{}, late: map[groupPart]int64{}, synced: map[generationID]map[string][]int32{},
		size: map[generationID]int{}, consumed: map[int32]map[int64]bool{}}
}

func (k *checker) groupCommitAcked(groupID string, part int32, offset int64, coord int32) {
	m := k.groups.acked[groupID]
	if m == nil {
		m = map[int32]int64{}
		k.groups.acked[groupID] = m
	}
	m[part] = max(m[part], offset)
	k.stats.GroupCommits++
	k.c.tracef("group %s commit of offset %d for partition %d acknowledged by n%d", groupID, offset, part, coord)
}

// groupCommitDelivered: a copy of an OffsetCommit request reached a
// broker (see groupChecks.late).
func (k *checker) groupCommitDelivered(req *kmsg.OffsetCommitRequest) {
	for _, t := range req.Topics {
		if t.Topic != topicName {
			continue
		}
		for _, p := range t.Partitions {
			gp := groupPart{req.Group, p.Partition}
			top, seen := k.groups.delivered[gp]
			if !seen || p.Offset >= top {
				k.groups.delivered[gp] = p.Offset
				delete(k.groups.late, gp)
				continue
			}
			k.groups.late[gp] = p.Offset
			k.c.tracef("group %s commit of offset %d for partition %d delivered after one of %d", req.Group, p.Offset, p.Partition, top)
		}
	}
}

// behind: a coordinator holding have for partition part of groupID lost
// an acknowledged commit (not merely kept a late arrival).
func (k *checker) behind(groupID string, part int32, have int64) bool {
	if have >= k.groups.acked[groupID][part] {
		return false
	}
	late, ok := k.groups.late[groupPart{groupID, part}]
	return !ok || late != have
}

// groupServed: the current coordinator (the leader of the group's
// partition in the newest committed metadata, in that leader epoch)
// answers every partition with at least the offset whose commit was
// acknowledged. A deposed coordinator that has not heard yet (partitioned
// away with clients still reaching it) may answer stale offsets, as in
// Kafka; those answers are not checked.
func (k *checker) groupServed(gc *coordinator, groupID string, got []group.FetchedOffset) {
	if !k.strict() || !k.isCurrentCoordinator(gc) {
		return
	}
	have := map[int32]int64{}
	asked := map[int32]bool{}
	for _, f := range got {
		if f.Topic == topicName {
			have[f.Partition] = f.Offset
			asked[f.Partition] = true
		}
	}
	acked := k.groups.acked[groupID]
	for _, part := range sortedKeys(acked) {
		if asked[part] && k.behind(groupID, part, have[part]) {
			k.c.violation("group %s: coordinator n%d (epoch %d) answers offset %d for partition %d after a commit of %d was acknowledged",
				groupID, gc.r.p.n.id, gc.epoch, have[part], part, acked[part])
			return
		}
	}
}

func (k *checker) isCurrentCoordinator(gc *coordinator) bool {
	ctl := k.c.activeController()
	if ctl == nil {
		return false
	}
	t, ok := ctl.image.Topic(offsetsTopic)
	if !ok || t.ID != gc.r.id {
		return false
	}
	st := t.Partitions[gc.r.index]
	if st.Leader != gc.r.p.n.id || st.LeaderEpoch != gc.epoch {
		k.c.tracef("group answer by deposed coordinator n%d (epoch %d; current n%d epoch %d): not checked",
			gc.r.p.n.id, gc.epoch, st.Leader, st.LeaderEpoch)
		return false
	}
	return true
}

// coordinatorLoaded: the current coordinator, loaded from the log, knows
// the group at a generation at least as new as the newest committed
// record's (its log may also hold newer records beyond the high
// watermark, possibly a tombstone: a removed group is not checked). A
// deposed one reloading after a failed write may know less; it answers
// nothing that matters.
func (k *checker) coordinatorLoaded(gc *coordinator) {
	if !k.strict() || k.groups.committedGeneration == 0 || !k.isCurrentCoordinator(gc) {
		return
	}
	t, ok := gc.r.p.image.Topic(offsetsTopic)
	if !ok || group.PartitionFor(memberGroup, int32(len(t.Partitions))) != gc.r.index {
		return
	}
	d := gc.host.Coordinator().DescribeGroup(memberGroup)
	if d.State == group.Dead {
		// Removed: by a tombstone whose write was answered with an error
		// but committed, or at load (an empty group without offsets is
		// dropped). Either way the group starts over at generation 1, so
		// an older incarnation's committed generation no longer bounds the
		// next load (seed 1148 at 2m: generation 5 committed, the group
		// dropped at load, then generation 2 of the new one loaded).
		k.groups.committedGeneration = 0
		return
	}
	if d.Generation < k.groups.committedGeneration {
		k.c.violation("group %s: coordinator n%d (epoch %d) loaded generation %d, but generation %d was committed",
			memberGroup, gc.r.p.n.id, gc.epoch, d.Generation, k.groups.committedGeneration)
	}
}

// memberSynced records a member's assignment in a generation: within a
// generation, assignments are disjoint, a member's is the same each time
// it syncs, and once every member the leader assigned for has synced they
// cover every partition.
func (k *checker) memberSynced(key string, generation generationID, parts []int32, leaderOf int) {
	g := &k.groups
	k.stats.GroupSyncs++
	byMember := g.synced[generation]
	if byMember == nil {
		byMember = map[string][]int32{}
		g.synced[generation] = byMember
	}
	if prev, ok := byMember[key]; ok && !slices.Equal(prev, parts) {
		k.c.violation("group %s generation %d: member %s assigned %v, then %v", memberGroup, generation.generation, key, prev, parts)
		return
	}
	for _, other := range slices.Sorted(maps.Keys(byMember)) {
		theirs := byMember[other]
		if other == key {
			continue
		}
		for _, p := range parts {
			if slices.Contains(theirs, p) {
				k.c.violation("group %s generation %d: partition %d assigned to both %s and %s", memberGroup, generation.generation, p, key, other)
				return
			}
		}
	}
	byMember[key] = parts
	if leaderOf > 0 {
		g.size[generation] = leaderOf
	}
	if n, ok := g.size[generation]; ok && len(byMember) == n {
		covered := map[int32]bool{}
		for _, ps := range byMember {
			for _, p := range ps {
				covered[p] = true
			}
		}
		if len(covered) != k.c.opts.Partitions {
			k.c.violation("group %s generation %d: every member synced, but partitions %v are covered, not all %d",
				memberGroup, generation.generation, sortedKeys(covered), k.c.opts.Partitions)
		}
	}
}

// groupRecordsCommitted follows the generation of the members' group in
// its committed metadata records (called in log order, as writes commit).
// groupLoadCommitted: the log a coordinator replayed is committed up to
// where it read, so the members' group stands as replayed (generation 0:
// absent, its tombstone committed). Acknowledged writes alone miss a
// record whose write timed out and that committed later all the same (a
// tombstone of the group, then a generation 1 of a new incarnation, would
// look like generation 1 loaded after generation 2 was committed).
func (k *checker) groupLoadCommitted(generation int32) {
	k.groups.committedGeneration = generation
}

func (k *checker) groupRecordsCommitted(recs []group.Record) {
	for _, rec := range recs {
		if len(rec.Key) < 2 || binary.BigEndian.Uint16(rec.Key) != 2 {
			continue
		}
		key := kmsg.NewGroupMetadataKey()
		if err := key.ReadFrom(rec.Key); err != nil || key.Group != memberGroup {
			continue
		}
		if rec.Value == nil {
			k.groups.committedGeneration = 0
			continue
		}
		v := kmsg.NewGroupMetadataValue()
		if err := v.ReadFrom(rec.Value); err == nil {
			k.groups.committedGeneration = v.Generation
		}
	}
}

func (k *checker) memberConsumed(part int32, off int64) {
	m := k.groups.consumed[part]
	if m == nil {
		m = map[int64]bool{}
		k.groups.consumed[part] = m
	}
	m[off] = true
}

// finalGroupCheck: after convergence each group's coordinator still holds
// every acknowledged commit, and every acks=all record below the members'
// group's committed offsets was consumed by some member (a member resumes
// where the group committed, so nothing below it is skipped).
func (k *checker) finalGroupCheck(ctl *process) bool {
	if !k.c.opts.Groups || !k.strict() {
		return true
	}
	t, ok := ctl.image.Topic(offsetsTopic)
	if !ok {
		return true
	}
	committed := map[int32]int64{}
	for _, groupID := range []string{simpleGroup, memberGroup} {
		st := t.Partitions[group.PartitionFor(groupID, int32(len(t.Partitions)))]
		r := k.c.nodes[st.Leader].proc.parts[partKey{t.ID, st.Index}]
		if r == nil || r.coord == nil {
			k.c.violation("no loaded group coordinator on n%d after convergence", st.Leader)
			return false
		}
		got := r.coord.host.Coordinator().FetchOffsets(groupID, nil)
		have := map[int32]int64{}
		for _, f := range got {
			if f.Topic == topicName {
				have[f.Partition] = f.Offset
			}
		}
		ackedOf := k.groups.acked[groupID]
		for _, part := range sortedKeys(ackedOf) {
			if acked := ackedOf[part]; k.behind(groupID, part, have[part]) {
				k.c.violation("group %s: commit of offset %d for partition %d was acknowledged, coordinator n%d now has %v",
					groupID, acked, part, st.Leader, fmt.Sprint(got))
				return false
			}
		}
		if groupID == memberGroup {
			committed = have
		}
	}
	for _, r := range k.order {
		if !r.acked || r.spec.Acks != -1 || r.offset >= committed[r.partition] {
			continue
		}
		if !k.groups.consumed[r.partition][r.offset] {
			k.c.violation("group %s committed offset %d for partition %d, but no member consumed acks=all record %s at offset %d",
				memberGroup, committed[r.partition], r.partition, r.value, r.offset)
			return false
		}
	}
	return true
}
