package api

// AlterPartition: versions 0-3, controller listener only. A partition
// leader proposes a new ISR with the leader and partition epochs it
// computed it from; the controller refuses stale proposals
// (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION) and answers with the
// partition state it committed. v2+ names topics by id; v3 carries broker
// epochs per ISR member, which we accept and check only by membership.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/metadata"
)

func init() {
	register(Spec{Key: 56, MinVersion: 2, MaxVersion: 3, Handle: handleAlterPartition, ControllerOnly: true})
}

func handleAlterPartition(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.AlterPartitionRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	// Every partition's slot is laid out first; each decision fills its
	// own as it is answered, and the last one sends the answer.
	answer := newCountdown(func() { respond(resp) })
	type slot struct{ t, p int }
	var slots []slot
	for ti, rt := range req.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.TopidID = rt.TopicID // sic: the field name in kmsg
		for pi, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionResponseTopicPartition()
			sp.Partition = rp.Partition
			st.Partitions = append(st.Partitions, sp)
			slots = append(slots, slot{ti, pi})
		}
		resp.Topics = append(resp.Topics, st)
	}
	for _, sl := range slots {
		rt, rp := req.Topics[sl.t], req.Topics[sl.t].Partitions[sl.p]
		isr := rp.NewISR
		if req.Version >= 3 {
			isr = isr[:0:0]
			for _, m := range rp.NewEpochISR {
				isr = append(isr, m.BrokerID)
			}
		}
		sp := &resp.Topics[sl.t].Partitions[sl.p]
		answer.add()
		s.Backend.Controller().AlterPartition(AlterPartitionParams{
			BrokerID: req.BrokerID, BrokerEpoch: req.BrokerEpoch, Topic: metadata.TopicID(rt.TopicID),
			Partition: rp.Partition, LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch, NewISR: isr,
		}, func(p metadata.Partition, err error) {
			sp.ErrorCode = ErrorCode(err)
			if err == nil {
				sp.LeaderID = p.Leader
				sp.LeaderEpoch = p.LeaderEpoch
				sp.ISR = p.ISR
				sp.PartitionEpoch = p.PartitionEpoch
			}
			answer.finish()
		})
	}
	answer.finish()
}
