package api

// AlterPartitionReassignments: versions 0-1 (KIP-455; v1 adds
// AllowReplicationFactorChange, KIP-1073). Each partition names its target
// replicas, or null to cancel its reassignment in progress. Needs ALTER on
// the cluster. Decided by the active controller (forwarded) at its turn in
// the decision queue; the answer comes once the accepted reassignments are
// committed, not once they complete (ListPartitionReassignments shows
// those still in progress).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/controller"
)

func init() {
	register(Spec{Key: 45, MinVersion: 0, MaxVersion: 1, Handle: handleAlterPartitionReassignments, Blocking: true, Forwardable: true})
}

func handleAlterPartitionReassignments(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	allowRFChange := req.Version < 1 || req.AllowReplicationFactorChange
	resp.AllowReplicationFactorChange = allowRFChange
	var reqs []controller.Reassignment
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			reqs = append(reqs, controller.Reassignment{Topic: t.Topic, Partition: p.Partition, Target: p.Replicas})
		}
	}
	var errs []error
	var all error
	if !s.allowedCluster(r, authz.OpAlter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr("AlterPartitionReassignments needs ALTER on the cluster")
		all = kerr.ClusterAuthorizationFailed
	} else {
		errs, all = s.Backend.Reassign(reqs, allowRFChange)
	}
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			err := all
			if err == nil && i < len(errs) {
				err = errs[i]
			}
			rp.ErrorCode, rp.ErrorMessage = ErrorCode(err), ErrorMessage(err)
			rt.Partitions = append(rt.Partitions, rp)
			i++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	respond(resp)
}
