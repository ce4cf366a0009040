package api

// ListPartitionReassignments: version 0 (KIP-455). The reassignments in
// progress, of the named partitions or (null topics) of every partition,
// with each one's full replica set and the replicas being added and
// removed. Needs DESCRIBE on the cluster. Answered from this broker's image,
// which every broker applies from the same metadata log; a forwarded
// AlterPartitionReassignments answers only once the forwarding broker's
// image holds its outcome, so a client reads what it wrote.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/metadata"
)

func init() {
	register(Spec{Key: 46, MinVersion: 0, MaxVersion: 0, Handle: handleListPartitionReassignments})
}

func handleListPartitionReassignments(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !s.allowedCluster(r, authz.OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr("ListPartitionReassignments needs DESCRIBE on the cluster")
		respond(resp)
		return
	}
	im := s.Backend.Image()
	// Only partitions being reassigned are listed; a named partition that
	// does not exist or is not moving is left out, as Kafka does.
	add := func(t *metadata.Topic, parts []metadata.Partition) {
		var rt *kmsg.ListPartitionReassignmentsResponseTopic
		for _, p := range parts {
			if !p.Reassigning() {
				continue
			}
			if rt == nil {
				resp.Topics = append(resp.Topics, kmsg.NewListPartitionReassignmentsResponseTopic())
				rt = &resp.Topics[len(resp.Topics)-1]
				rt.Topic = t.Name
			}
			rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			rp.Partition = p.Index
			rp.Replicas = slices.Clone(p.Replicas)
			rp.AddingReplicas = nonNil(p.AddingReplicas)
			rp.RemovingReplicas = nonNil(p.RemovingReplicas)
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
	if req.Topics == nil {
		for _, t := range im.Topics() {
			add(t, t.Partitions)
		}
	} else {
		for _, rt := range req.Topics {
			t, ok := im.Topic(rt.Topic)
			if !ok {
				continue
			}
			var parts []metadata.Partition
			for _, i := range rt.Partitions {
				if p, ok := t.Partition(i); ok && !slices.ContainsFunc(parts, func(q metadata.Partition) bool { return q.Index == i }) {
					parts = append(parts, p)
				}
			}
			add(t, parts)
		}
	}
	respond(resp)
}

// nonNil answers an empty list rather than a null one (the field is not
// nullable).
func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return slices.Clone(ids)
}
