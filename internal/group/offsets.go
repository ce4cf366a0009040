package group

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// offsetEntry is one committed offset.
type offsetEntry struct {
	offset      int64
	leaderEpoch int32 // -1 when unknown
	metadata    string
	commitTime  int64
	// expireTime is an explicit expiry from an OffsetCommitValue v1 record
	// written by an old Kafka; -1 (the rule of KIP-211 applies) otherwise.
	expireTime int64
	// order is the commit's place in the log (Coordinator.commitSeq).
	order uint64
}

// CommitRequest is an OffsetCommit request. Generation -1 with an empty
// MemberID commits for a group that does not use group management (simple
// consumers, admin tools); that needs the group to be empty.
type CommitRequest struct {
	GroupID    string
	MemberID   string
	InstanceID string
	Generation int32
	Offsets    []CommitOffset
}

// CommitOffset is one partition's offset to commit.
type CommitOffset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
}

// PartitionError is the outcome for one partition; Err is nil or a
// *kerr.Error.
type PartitionError struct {
	Topic     string
	Partition int32
	Err       error
}

// FetchedOffset is a committed offset, or Offset -1 when there is none.
// Unstable is set when a transaction that has not ended yet committed an
// offset for the partition: OffsetFetch with require_stable (v7+,
// KIP-447) answers it UNSTABLE_OFFSET_COMMIT instead.
type FetchedOffset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	Unstable    bool
}

// CommitOffsets handles OffsetCommit. The answer may be sent once the
// Output's records are committed.
func (c *Coordinator) CommitOffsets(now int64, req CommitRequest) ([]PartitionError, Output) {
	var out Output
	g := c.groups[req.GroupID]
	var err error
	switch {
	case g == nil && req.Generation < 0:
		g = newGroup(c, req.GroupID, now)
		c.groups[req.GroupID] = g
	case g == nil:
		err = kerr.IllegalGeneration
	default:
		err = g.validateCommit(now, req)
	}
	results := c.eachOffset(now, req.Offsets, err, func(tp TopicPartition, e offsetEntry) {
		g.offsets[tp] = e
		out.Records = append(out.Records, offsetCommitRecord(g.id, tp, e))
	})
	if g != nil {
		c.changed(g)
	}
	return results, out
}

// eachOffset answers each offset of a commit: err for every one when set,
// OFFSET_METADATA_TOO_LARGE for one with too much metadata; store gets the
// others' entries, in request order.
func (c *Coordinator) eachOffset(now int64, offsets []CommitOffset, err error, store func(TopicPartition, offsetEntry)) []PartitionError {
	results := make([]PartitionError, len(offsets))
	for i, o := range offsets {
		results[i] = PartitionError{Topic: o.Topic, Partition: o.Partition, Err: err}
		if err != nil {
			continue
		}
		if len(o.Metadata) > c.cfg.MaxOffsetMetadataBytes {
			results[i].Err = kerr.OffsetMetadataTooLarge
			continue
		}
		store(TopicPartition{Topic: o.Topic, Partition: o.Partition},
			offsetEntry{offset: o.Offset, leaderEpoch: o.LeaderEpoch, metadata: o.Metadata, commitTime: now, expireTime: -1, order: c.nextCommit()})
	}
	return results
}

// validateCommit is Kafka's check of who may commit: anyone for an empty
// group with generation -1, otherwise only a current member with the
// current generation and not while the assignment is being decided.
func (g *Group) validateCommit(now int64, req CommitRequest) error {
	if req.InstanceID != "" {
		if id, ok := g.static[req.InstanceID]; ok && id != req.MemberID {
			return kerr.FencedInstanceID
		}
	}
	if req.Generation < 0 && g.state == Empty {
		return nil
	}
	m := g.members[req.MemberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID
	case req.Generation != g.generation:
		return kerr.IllegalGeneration
	case g.state == CompletingRebalance:
		return kerr.RebalanceInProgress
	}
	m.lastHeartbeat = now // a commit proves the member is alive
	return nil
}

// FetchOffsets handles OffsetFetch: the listed partitions, or every
// committed one (sorted) when partitions is nil.
func (c *Coordinator) FetchOffsets(groupID string, partitions []TopicPartition) []FetchedOffset {
	g := c.groups[groupID]
	if partitions == nil {
		if g == nil {
			return nil
		}
		partitions = make([]TopicPartition, 0, len(g.offsets))
		for tp := range g.offsets {
			partitions = append(partitions, tp)
		}
		slices.SortFunc(partitions, compareTopicPartition)
	}
	out := make([]FetchedOffset, len(partitions))
	for i, tp := range partitions {
		out[i] = FetchedOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: -1, LeaderEpoch: -1}
		if g == nil {
			continue
		}
		if e, ok := g.offsets[tp]; ok {
			out[i].Offset, out[i].LeaderEpoch, out[i].Metadata = e.offset, e.leaderEpoch, e.metadata
		}
		out[i].Unstable = g.hasTxnOffset(tp)
	}
	return out
}

func compareTopicPartition(a, b TopicPartition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// DeleteOffsetsResponse answers OffsetDelete: Err for the whole request,
// else one entry per partition in request order.
type DeleteOffsetsResponse struct {
	Err        error
	Partitions []PartitionError
}

// DeleteOffsets handles OffsetDelete (KIP-496): allowed for an empty
// group, and for a consumer group only on topics none of its members
// subscribes to.
func (c *Coordinator) DeleteOffsets(groupID string, partitions []TopicPartition) (DeleteOffsetsResponse, Output) {
	var out Output
	g := c.groups[groupID]
	if g == nil {
		return DeleteOffsetsResponse{Err: kerr.GroupIDNotFound}, out
	}
	if g.state != Empty && g.subscribed == nil {
		return DeleteOffsetsResponse{Err: kerr.NonEmptyGroup}, out
	}
	resp := DeleteOffsetsResponse{Partitions: make([]PartitionError, len(partitions))}
	for i, tp := range partitions {
		resp.Partitions[i] = PartitionError{Topic: tp.Topic, Partition: tp.Partition}
		if _, subscribed := g.subscribed[tp.Topic]; subscribed && g.state != Empty {
			resp.Partitions[i].Err = kerr.GroupSubscribedToTopic
			continue
		}
		if _, ok := g.offsets[tp]; ok {
			delete(g.offsets, tp)
			out.Records = append(out.Records, offsetTombstone(g.id, tp))
		}
	}
	c.changed(g)
	return resp, out
}

// ExpireOffsets removes offsets past offsets.retention.ms (KIP-211) and
// then empty groups without offsets. The runtime calls it every
// offsets.retention.check.interval.ms.
func (c *Coordinator) ExpireOffsets(now int64) Output {
	var out Output
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		for _, tp := range g.expiredOffsets(now, c.cfg.OffsetsRetentionMs) {
			delete(g.offsets, tp)
			out.Records = append(out.Records, offsetTombstone(g.id, tp))
		}
		if g.state == Empty && len(g.offsets) == 0 && len(g.pending) == 0 && len(g.txnOffsets) == 0 {
			c.removeGroup(g, &out)
			continue
		}
		c.changed(g)
	}
	return out
}

// expiredOffsets applies KIP-211: an empty group's offsets expire a
// retention period after it became empty; a group that never had members
// (offsets only) expires each offset a retention period after its commit;
// a stable consumer group expires offsets of topics nobody subscribes to.
func (g *Group) expiredOffsets(now, retention int64) []TopicPartition {
	var base func(e offsetEntry) int64
	skip := func(string) bool { return false }
	switch {
	case g.protocolType == "":
		base = func(e offsetEntry) int64 { return e.commitTime }
	case g.state == Empty:
		// Kafka counts from when the group became empty; an offset
		// committed to the empty group later (an admin reset) gets its own
		// full retention here rather than expiring at the next check.
		base = func(e offsetEntry) int64 { return max(g.stateSince, e.commitTime) }
	case g.state == Stable && g.subscribed != nil:
		base = func(e offsetEntry) int64 { return e.commitTime }
		skip = func(topic string) bool { _, ok := g.subscribed[topic]; return ok }
	default:
		return nil
	}
	var expired []TopicPartition
	for tp, e := range g.offsets {
		if skip(tp.Topic) {
			continue
		}
		if e.expireTime >= 0 && now >= e.expireTime || e.expireTime < 0 && now-base(e) >= retention {
			expired = append(expired, tp)
		}
	}
	slices.SortFunc(expired, compareTopicPartition)
	return expired
}
