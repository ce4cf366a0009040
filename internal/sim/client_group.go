package sim

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/group"
)

// offsetCommitter commits ever larger offsets for the data topic's
// partitions in one group (as a simple consumer: generation -1, no
// member id) and now and then fetches them back. It finds the coordinator
// as the leader of the group's __consumer_offsets partition.
type offsetCommitter struct {
	c     *Cluster
	lc    *leaderCache
	next  map[int32]int64
	count int64
	busy  bool
}

func (oc *offsetCommitter) start() { oc.c.s.after(oc.c.s.between(time.Second, 2*time.Second), oc.loop) }

func (oc *offsetCommitter) loop() {
	c := oc.c
	if c.stopped || c.healed {
		return
	}
	c.s.after(c.s.between(20*time.Millisecond, 200*time.Millisecond), oc.loop)
	if oc.busy {
		return
	}
	coordPart := group.PartitionFor(simGroup, 1)
	coord, ok := oc.lc.leader(coordPart)
	if !ok {
		oc.lc.refresh()
		return
	}
	oc.busy = true
	part := int32(c.s.rng.IntN(c.opts.Partitions))
	if c.s.chance(0.3) {
		oc.fetch(coord, coordPart)
		return
	}
	oc.count++
	offset := oc.count // strictly increasing over every partition
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group = simGroup
	req.Generation = -1
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topicName
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch = part, offset, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	c.call(oc.lc.self, coord, req, groupCommitTTL+rpcTimeout, func(resp kmsg.Response, err error) {
		oc.busy = false
		if err == nil {
			r := resp.(*kmsg.OffsetCommitResponse)
			if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
				err = kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode)
			}
		}
		if err != nil {
			c.tracef("group commit of offset %d for partition %d via n%d failed: %v", offset, part, coord, err)
			oc.lc.forget(coordPart)
			return
		}
		c.check.groupCommitAcked(part, offset, coord)
	})
}

func (oc *offsetCommitter) fetch(coord, coordPart int32) {
	c := oc.c
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = simGroup
	t := kmsg.NewOffsetFetchRequestTopic()
	t.Topic = topicName
	for p := range int32(c.opts.Partitions) {
		t.Partitions = append(t.Partitions, p)
	}
	req.Topics = append(req.Topics, t)
	c.call(oc.lc.self, coord, req, rpcTimeout, func(resp kmsg.Response, err error) {
		oc.busy = false
		if err != nil || resp.(*kmsg.OffsetFetchResponse).ErrorCode != 0 {
			oc.lc.forget(coordPart)
		}
	})
}

func (k *checker) groupCommitAcked(part int32, offset int64, coord int32) {
	k.groupAcked[part] = max(k.groupAcked[part], offset)
	k.stats.GroupCommits++
	k.c.tracef("group commit of offset %d for partition %d acknowledged by n%d", offset, part, coord)
}

// groupServed: the current coordinator (the leader of the group's
// partition in the newest committed metadata, in that leader epoch)
// answers every partition with at least the offset whose commit was
// acknowledged. A deposed coordinator that has not heard yet (partitioned
// away with clients still reaching it) may answer stale offsets, as in
// Kafka; those answers are not checked.
func (k *checker) groupServed(r *replica, got []group.FetchedOffset) {
	if !k.strict() {
		return
	}
	ctl := k.c.activeController()
	if ctl == nil {
		return
	}
	t, ok := ctl.image.Topic(offsetsTopic)
	if !ok || t.ID != r.id {
		return
	}
	st := t.Partitions[r.index]
	if st.Leader != r.p.n.id || st.LeaderEpoch != r.leaderEpoch {
		k.c.tracef("offset fetch answered by deposed coordinator n%d (epoch %d; current n%d epoch %d): not checked",
			r.p.n.id, r.leaderEpoch, st.Leader, st.LeaderEpoch)
		return
	}
	have := map[int32]int64{}
	for _, f := range got {
		if f.Topic == topicName {
			have[f.Partition] = f.Offset
		}
	}
	for _, part := range sortedKeys(k.groupAcked) {
		if have[part] < k.groupAcked[part] {
			k.c.violation("group %s: coordinator n%d (epoch %d) answers offset %d for partition %d after a commit of %d was acknowledged",
				simGroup, r.p.n.id, r.leaderEpoch, have[part], part, k.groupAcked[part])
			return
		}
	}
}
