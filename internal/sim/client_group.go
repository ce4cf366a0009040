package sim

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/group"
)

// simpleGroup is committed to by a simple consumer (no membership), next
// to memberGroup's members.
const simpleGroup = "sim-simple"

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
	coordPart := group.PartitionFor(simpleGroup, 1)
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
	req.Group = simpleGroup
	req.Generation = -1
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topicName
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch = part, offset, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	c.call(oc.lc.self, coord, req, groupWriteTimeout+rpcTimeout, func(resp kmsg.Response, err error) {
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
		c.check.groupCommitAcked(simpleGroup, part, offset, coord)
	})
}

func (oc *offsetCommitter) fetch(coord, coordPart int32) {
	c := oc.c
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = simpleGroup
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
