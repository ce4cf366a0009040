package api

// AlterPartition: versions 0-3, controller listener only. A partition
// leader proposes a new ISR with the leader and partition epochs it
// computed it from; the controller refuses stale proposals
// (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION) and answers with the
// partition state it committed. v2+ names topics by id; v3 carries broker
// epochs per ISR member, which we accept and check only by membership.
// All the changes of one request are decided as one controller decision
// and committed in one metadata entry (a broker batches what it has
// pending), each refused or accepted on its own.

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
	// Every partition's slot is laid out first; the one decision of the
	// whole request (one metadata entry) fills them all.
	type slot struct{ t, p int }
	var slots []slot
	var params []AlterPartitionParams
	for ti, rt := range req.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.TopidID = rt.TopicID // sic: the field name in kmsg
		for pi, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionResponseTopicPartition()
			sp.Partition = rp.Partition
			st.Partitions = append(st.Partitions, sp)
			slots = append(slots, slot{ti, pi})
			isr := rp.NewISR
			if req.Version >= 3 {
				isr = isr[:0:0]
				for _, m := range rp.NewEpochISR {
					isr = append(isr, m.BrokerID)
				}
			}
			params = append(params, AlterPartitionParams{
				BrokerID: req.BrokerID, BrokerEpoch: req.BrokerEpoch, Topic: metadata.TopicID(rt.TopicID),
				Partition: rp.Partition, LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch, NewISR: isr,
			})
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(params) == 0 {
		respond(resp)
		return
	}
	s.Backend.Controller().AlterPartitions(params, func(res []AlterPartitionResult) {
		for i, sl := range slots {
			sp := &resp.Topics[sl.t].Partitions[sl.p]
			sp.ErrorCode = ErrorCode(res[i].Err)
			if res[i].Err == nil {
				p := res[i].Partition
				sp.LeaderID = p.Leader
				sp.LeaderEpoch = p.LeaderEpoch
				sp.ISR = p.ISR
				sp.PartitionEpoch = p.PartitionEpoch
			}
		}
		respond(resp)
	})
}
