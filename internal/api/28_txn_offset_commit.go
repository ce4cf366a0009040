package api

// TxnOffsetCommit: versions 0-3 (v3 is flexible and adds the member id,
// generation and group.instance.id of KIP-447; franz-go, sarama and
// librdkafka send v0-3). A transactional producer commits a group's
// offsets inside its transaction, after AddOffsetsToTxn added the group's
// __consumer_offsets partition to it: the group coordinator writes them as
// a transactional batch of the producer and holds them pending, invisible
// to OffsetFetch, until the transaction's COMMIT marker is committed on
// that partition (an ABORT drops them); OffsetFetch v7+ with
// require_stable answers UNSTABLE_OFFSET_COMMIT meanwhile.
//
// As Kafka checks: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the group
// (GROUP_AUTHORIZATION_FAILED), for every partition; then READ on each
// topic (TOPIC_AUTHORIZATION_FAILED) and the partition's existence
// (UNKNOWN_TOPIC_OR_PARTITION). The coordinator answers v3's group checks
// with FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION, a
// producer epoch older than one it saw with INVALID_PRODUCER_EPOCH, and
// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or
// COORDINATOR_NOT_AVAILABLE as OffsetCommit does. v4+ (KIP-890's
// transaction version 2) is not served.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/group"
)

func init() {
	register(Spec{Key: 28, MinVersion: 0, MaxVersion: 3, Handle: handleTxnOffsetCommit})
}

func handleTxnOffsetCommit(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	var whole int16 // an error for every partition
	switch {
	case !s.allowed(r, authz.OpWrite, authz.ResourceTransactionalID, req.TransactionalID):
		whole = kerr.TransactionalIDAuthorizationFailed.Code
	case !s.allowed(r, authz.OpRead, authz.ResourceGroup, req.Group):
		whole = kerr.GroupAuthorizationFailed.Code
	case req.Group == "":
		whole = kerr.InvalidGroupID.Code
	case req.ProducerID < 0 || req.ProducerEpoch < 0:
		whole = kerr.InvalidProducerIDMapping.Code
	}
	total := 0
	for _, t := range req.Topics {
		total += len(t.Partitions)
	}
	// codes holds each partition's answer in request order; -1 marks the
	// ones the coordinator decides.
	var codes [][]int16
	var commit []group.CommitOffset
	im := s.Backend.Image()
	for _, t := range req.Topics {
		tc := make([]int16, len(t.Partitions))
		topic, known := im.Topic(t.Topic)
		topicOK := whole == 0 && s.allowed(r, authz.OpRead, authz.ResourceTopic, t.Topic)
		for i, p := range t.Partitions {
			switch {
			case whole != 0:
				tc[i] = whole
			case !topicOK:
				tc[i] = kerr.TopicAuthorizationFailed.Code
			case total > maxCommitPartitions:
				tc[i] = kerr.InvalidRequest.Code
			case !known || p.Partition < 0 || int(p.Partition) >= len(topic.Partitions):
				tc[i] = kerr.UnknownTopicOrPartition.Code
			default:
				tc[i] = -1
				epoch := p.LeaderEpoch
				if r.Version < 2 {
					epoch = -1
				}
				commit = append(commit, group.CommitOffset{
					Topic: t.Topic, Partition: p.Partition, Offset: p.Offset,
					LeaderEpoch: epoch, Metadata: deref(p.Metadata),
				})
			}
		}
		codes = append(codes, tc)
	}
	answer := func(results []group.PartitionError, err error) {
		next := 0
		for ti, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for pi, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
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
	creq := group.TxnCommitRequest{
		GroupID:       req.Group,
		ProducerID:    req.ProducerID,
		ProducerEpoch: req.ProducerEpoch,
		Generation:    -1,
		Offsets:       commit,
	}
	if r.Version >= 3 {
		creq.MemberID, creq.InstanceID, creq.Generation = req.MemberID, deref(req.InstanceID), req.Generation
	}
	s.Backend.Groups().TxnCommitOffsets(creq, answer)
}

// decidedCode is a partition's answer in an offset commit: code when the
// handler decided it, else (code -1) the coordinator's result at next, or
// err for the whole request; it returns the next result's index.
func decidedCode(code int16, results []group.PartitionError, next int, err error) (int16, int) {
	if code != -1 {
		return code, next
	}
	if err != nil {
		return ErrorCode(err), next + 1
	}
	return ErrorCode(results[next].Err), next + 1
}
