package sim

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/records"
)

// The group coordinator's runtime for offset commits and fetches, wired as
// internal/group's contract asks: a Coordinator per __consumer_offsets
// partition this node leads, rebuilt by replaying the partition's log when
// leadership arrives; records are appended with acks=all and a commit is
// answered only once they are committed; a failed append answers
// NOT_COORDINATOR and reloads from the log. internal/node does not wire
// groups yet; the simulated clients reach this through OffsetCommit and
// OffsetFetch requests (membership, join and sync are not simulated).

const (
	offsetsTopic   = "__consumer_offsets"
	simGroup       = "sim-group"
	groupCommitTTL = 2 * time.Second
)

// loadCoordinator builds the coordinator of an offsets partition this
// replica just started leading, from every record in its log.
func (r *replica) loadCoordinator() {
	r.coord = nil
	c, err := group.New(group.DefaultConfig(), r.p.n.c.s.rng.Uint64())
	if err != nil {
		r.p.n.c.violation("group coordinator: %v", err)
		return
	}
	now := r.nowMs()
	next := r.log.LogStartOffset()
	for leo := r.log.LogEndOffset(); next < leo; {
		data, err := r.log.Read(next, 1<<20, leo, true)
		if err != nil || len(data) == 0 {
			r.p.n.tracef("%s: cannot replay offsets log at %d: %v", r.name(), next, err)
			return
		}
		err = batch.Split(data, func(b []byte) error {
			h, recs, err := records.Decode(b, 1<<20)
			if err != nil {
				return err
			}
			for _, rec := range recs {
				if err := c.Apply(now, group.Record{Key: rec.Key, Value: rec.Value}); err != nil {
					return err
				}
			}
			next = h.LastOffset() + 1
			return nil
		})
		if err != nil {
			r.p.n.tracef("%s: cannot replay offsets log at %d: %v", r.name(), next, err)
			return
		}
	}
	r.coord = c
	r.p.n.tracef("%s: group coordinator loaded from %d offsets", r.name(), next)
}

// coordinatorFor is the loaded coordinator of the group's partition if
// this node leads it.
func (p *process) coordinatorFor(groupID string) *replica {
	t, ok := p.image.Topic(offsetsTopic)
	if !ok {
		return nil
	}
	r := p.parts[partKey{t.ID, group.PartitionFor(groupID, int32(len(t.Partitions)))}]
	if r == nil || r.leader == nil || r.coord == nil {
		return nil
	}
	return r
}

func (p *process) onOffsetCommit(req *kmsg.OffsetCommitRequest, respond api.Respond) {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	answer := func(errs func(topic string, partition int32) error) {
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, pt := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition = pt.Partition
				rp.ErrorCode = api.ErrorCode(errs(t.Topic, pt.Partition))
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		respond(resp)
	}
	r := p.coordinatorFor(req.Group)
	if r == nil {
		answer(func(string, int32) error { return kerr.NotCoordinator })
		return
	}
	cr := group.CommitRequest{GroupID: req.Group, MemberID: req.MemberID, Generation: req.Generation}
	for _, t := range req.Topics {
		for _, pt := range t.Partitions {
			cr.Offsets = append(cr.Offsets, group.CommitOffset{Topic: t.Topic, Partition: pt.Partition,
				Offset: pt.Offset, LeaderEpoch: pt.LeaderEpoch})
		}
	}
	results, out := r.coord.CommitOffsets(r.nowMs(), cr)
	errOf := func(topic string, partition int32) error {
		for _, res := range results {
			if res.Topic == topic && res.Partition == partition {
				return res.Err
			}
		}
		return kerr.UnknownServerError
	}
	if len(out.Records) == 0 {
		answer(errOf)
		return
	}
	kvs := make([]batch.KeyValue, len(out.Records))
	for i, rec := range out.Records {
		kvs[i] = batch.KeyValue{Key: rec.Key, Value: rec.Value}
	}
	b := batch.BuildKeyed(kvs, r.nowMs())
	r.produce(api.ProduceParams{Topic: r.id, Partition: r.index, Batches: [][]byte{b}, Acks: -1, Timeout: groupCommitTTL},
		func(res api.ProduceResult) {
			if res.Err != nil {
				// The coordinator's memory ran ahead of the log: start
				// over from the log if this node still leads.
				r.p.n.tracef("%s: offset commit not committed (%v); reloading the coordinator", r.name(), res.Err)
				r.coord = nil
				if r.leader != nil {
					r.loadCoordinator()
				}
				answer(func(string, int32) error { return kerr.NotCoordinator })
				return
			}
			answer(errOf)
		})
}

func (p *process) onOffsetFetch(req *kmsg.OffsetFetchRequest, respond api.Respond) {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	r := p.coordinatorFor(req.Group)
	if r == nil {
		resp.ErrorCode = kerr.NotCoordinator.Code
		respond(resp)
		return
	}
	var tps []group.TopicPartition
	for _, t := range req.Topics {
		for _, part := range t.Partitions {
			tps = append(tps, group.TopicPartition{Topic: t.Topic, Partition: part})
		}
	}
	fetched := r.coord.FetchOffsets(req.Group, tps)
	if req.Group == simGroup {
		p.n.c.check.groupServed(r, fetched)
	}
	byTopic := map[string]int{}
	for _, f := range fetched {
		i, ok := byTopic[f.Topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[f.Topic] = i
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = f.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewOffsetFetchResponseTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = f.Partition, f.Offset, f.LeaderEpoch
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	respond(resp)
}

// finalGroupCheck: after convergence the group's coordinator still holds
// every acknowledged commit.
func (k *checker) finalGroupCheck(ctl *process) bool {
	if !k.c.opts.Groups || !k.strict() {
		return true
	}
	t, ok := ctl.image.Topic(offsetsTopic)
	if !ok {
		return true
	}
	st := t.Partitions[group.PartitionFor(simGroup, int32(len(t.Partitions)))]
	r := k.c.nodes[st.Leader].proc.parts[partKey{t.ID, st.Index}]
	if r == nil || r.coord == nil {
		k.c.violation("no loaded group coordinator on n%d after convergence", st.Leader)
		return false
	}
	for part, acked := range k.groupAcked {
		got := r.coord.FetchOffsets(simGroup, []group.TopicPartition{{Topic: topicName, Partition: part}})
		if len(got) != 1 || got[0].Offset < acked {
			k.c.violation("group %s: commit of offset %d for partition %d was acknowledged, coordinator n%d now has %v",
				simGroup, acked, part, st.Leader, fmt.Sprint(got))
			return false
		}
	}
	return true
}
