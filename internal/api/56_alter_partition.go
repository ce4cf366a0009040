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
	register(Spec{Key: 56, MinVersion: 2, MaxVersion: 3, Handle: handleAlterPartition, Blocking: true, ControllerOnly: true})
}

func handleAlterPartition(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.AlterPartitionRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.TopidID = rt.TopicID // sic: the field name in kmsg
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionResponseTopicPartition()
			sp.Partition = rp.Partition
			isr := rp.NewISR
			if req.Version >= 3 {
				isr = isr[:0:0]
				for _, m := range rp.NewEpochISR {
					isr = append(isr, m.BrokerID)
				}
			}
			p, err := s.Backend.Controller().AlterPartition(req.BrokerID, req.BrokerEpoch, metadata.TopicID(rt.TopicID), rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, isr)
			sp.ErrorCode = ErrorCode(err)
			if err == nil {
				sp.LeaderID = p.Leader
				sp.LeaderEpoch = p.LeaderEpoch
				sp.ISR = p.ISR
				sp.PartitionEpoch = p.PartitionEpoch
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	respond(resp)
}
