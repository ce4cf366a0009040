package api

// OffsetCommit: versions 2-8. A member commits with its generation and
// member id; a client outside any group ("simple consumer") with
// generation -1 and no member id. v2-v4 carry a retention time, which we
// ignore as Kafka 2.1+ does (KIP-211: offsets.retention.minutes applies);
// v6+ carries the leader epoch of the committed offset; v7+
// group.instance.id. Offsets of topics or partitions that do not exist get
// UNKNOWN_TOPIC_OR_PARTITION and are not stored; the others are answered
// once committed to __consumer_offsets (acks=all).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/group"
)

func init() {
	register(Spec{Key: 8, MinVersion: 2, MaxVersion: 8, Handle: handleOffsetCommit})
}

// maxCommitPartitions bounds the offsets of one OffsetCommit.
const maxCommitPartitions = 100_000

func handleOffsetCommit(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	// codes holds each partition's answer in request order; -1 marks the
	// ones the coordinator decides.
	var codes [][]int16
	var commit []group.CommitOffset
	im := s.Backend.Image()
	groupOK := s.allowed(r, authz.OpRead, authz.ResourceGroup, req.Group)
	total := 0
	for _, t := range req.Topics {
		total += len(t.Partitions)
	}
	for _, t := range req.Topics {
		tc := make([]int16, len(t.Partitions))
		topic, known := im.Topic(t.Topic)
		topicOK := groupOK && s.allowed(r, authz.OpRead, authz.ResourceTopic, t.Topic)
		for i, p := range t.Partitions {
			switch {
			case req.Group == "":
				tc[i] = kerr.InvalidGroupID.Code
			case !groupOK:
				tc[i] = kerr.GroupAuthorizationFailed.Code
			case !topicOK:
				tc[i] = kerr.TopicAuthorizationFailed.Code
			case total > maxCommitPartitions:
				tc[i] = kerr.InvalidRequest.Code
			case !known || p.Partition < 0 || int(p.Partition) >= len(topic.Partitions):
				tc[i] = kerr.UnknownTopicOrPartition.Code
			default:
				tc[i] = -1
				commit = append(commit, group.CommitOffset{
					Topic: t.Topic, Partition: p.Partition, Offset: p.Offset,
					LeaderEpoch: leaderEpochOrUnknown(r.Version, p.LeaderEpoch), Metadata: deref(p.Metadata),
				})
			}
		}
		codes = append(codes, tc)
	}
	answer := func(results []group.PartitionError, err error) {
		next := 0
		for ti, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for pi, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode, next = decidedCode(codes[ti][pi], results, next, err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		respond(resp)
	}
	if len(commit) == 0 {
		answer(nil, nil)
		return
	}
	s.Backend.Groups().CommitOffsets(group.CommitRequest{
		GroupID:    req.Group,
		MemberID:   req.MemberID,
		InstanceID: deref(req.InstanceID),
		Generation: req.Generation,
		Offsets:    commit,
	}, answer)
}

// leaderEpochOrUnknown is the committed offset's leader epoch, -1 before
// v6 (which did not carry one).
func leaderEpochOrUnknown(version int16, epoch int32) int32 {
	if version < 6 {
		return -1
	}
	return epoch
}
