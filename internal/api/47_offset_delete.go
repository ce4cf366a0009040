package api

// OffsetDelete: version 0 (KIP-496). Deletes committed offsets of a group
// that is empty or does not subscribe to their topics
// (GROUP_SUBSCRIBED_TO_TOPIC otherwise); answered once the tombstones are
// committed.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/group"
)

func init() {
	register(Spec{Key: 47, MinVersion: 0, MaxVersion: 0, Handle: handleOffsetDelete})
}

func handleOffsetDelete(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		respond(resp)
		return
	}
	if !s.allowed(r, authz.OpDelete, authz.ResourceGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		respond(resp)
		return
	}
	var parts []group.TopicPartition
	topicOK := make([]bool, len(req.Topics))
	for i, t := range req.Topics {
		if topicOK[i] = s.allowed(r, authz.OpRead, authz.ResourceTopic, t.Topic); !topicOK[i] {
			continue
		}
		for _, p := range t.Partitions {
			parts = append(parts, group.TopicPartition{Topic: t.Topic, Partition: p.Partition})
		}
	}
	if len(parts) > maxCommitPartitions {
		resp.ErrorCode = kerr.InvalidRequest.Code
		respond(resp)
		return
	}
	s.Backend.Groups().DeleteOffsets(req.Group, parts, func(res group.DeleteOffsetsResponse) {
		resp.ErrorCode = ErrorCode(res.Err)
		if res.Err == nil {
			next := 0
			for ti, t := range req.Topics {
				rt := kmsg.NewOffsetDeleteResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetDeleteResponseTopicPartition()
					rp.Partition = p.Partition
					if !topicOK[ti] {
						rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
						rt.Partitions = append(rt.Partitions, rp)
						continue
					}
					if next < len(res.Partitions) {
						rp.ErrorCode = ErrorCode(res.Partitions[next].Err)
					}
					next++
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		respond(resp)
	})
}
