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
	var whole int16
	switch {
	case req.Group == "":
		whole = kerr.InvalidGroupID.Code
	case !s.allowed(r, authz.OpRead, authz.ResourceGroup, req.Group):
		whole = kerr.GroupAuthorizationFailed.Code
	}
	topics := make([]commitTopic, len(req.Topics))
	for i, t := range req.Topics {
		topics[i].name = t.Topic
		for _, p := range t.Partitions {
			topics[i].offsets = append(topics[i].offsets, group.CommitOffset{
				Topic: t.Topic, Partition: p.Partition, Offset: p.Offset,
				LeaderEpoch: leaderEpochOrUnknown(r.Version, p.LeaderEpoch), Metadata: deref(p.Metadata),
			})
		}
	}
	plan := s.planCommit(r, whole, topics)
	answer := func(results []group.PartitionError, err error) {
		resp.Topics = make([]kmsg.OffsetCommitResponseTopic, len(req.Topics))
		for i, t := range req.Topics {
			resp.Topics[i] = kmsg.NewOffsetCommitResponseTopic()
			resp.Topics[i].Topic = t.Topic
		}
		plan.answer(results, err, func(ti int, p int32, code int16) {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, rp)
		})
		respond(resp)
	}
	if len(plan.commit) == 0 {
		answer(nil, nil)
		return
	}
	s.Backend.Groups().CommitOffsets(group.CommitRequest{
		GroupID:    req.Group,
		MemberID:   req.MemberID,
		InstanceID: deref(req.InstanceID),
		Generation: req.Generation,
		Offsets:    plan.commit,
	}, answer)
}

// commitTopic is one topic of an offset commit request (OffsetCommit or
// TxnOffsetCommit), its partitions in request order.
type commitTopic struct {
	name    string
	offsets []group.CommitOffset
}

// commitPlan is what an offset commit handler answers itself: codes holds
// each partition's answer in request order, -1 marking the ones the
// coordinator decides; commit are those, for the coordinator.
type commitPlan struct {
	topics []commitTopic
	codes  [][]int16
	commit []group.CommitOffset
}

// planCommit checks each partition as Kafka's handlers do: whole (a
// request-level refusal) for all, else READ on the topic, the request's
// size and the partition's existence.
func (s *Server) planCommit(r *Request, whole int16, topics []commitTopic) commitPlan {
	plan := commitPlan{topics: topics}
	im := s.Backend.Image()
	total := 0
	for _, t := range topics {
		total += len(t.offsets)
	}
	for _, t := range topics {
		tc := make([]int16, len(t.offsets))
		topic, known := im.Topic(t.name)
		topicOK := whole == 0 && s.allowed(r, authz.OpRead, authz.ResourceTopic, t.name)
		for i, o := range t.offsets {
			switch {
			case whole != 0:
				tc[i] = whole
			case !topicOK:
				tc[i] = kerr.TopicAuthorizationFailed.Code
			case total > maxCommitPartitions:
				tc[i] = kerr.InvalidRequest.Code
			case !known || o.Partition < 0 || int(o.Partition) >= len(topic.Partitions):
				tc[i] = kerr.UnknownTopicOrPartition.Code
			default:
				tc[i] = -1
				plan.commit = append(plan.commit, o)
			}
		}
		plan.codes = append(plan.codes, tc)
	}
	return plan
}

// answer calls fn with every partition's code in request order, taking
// the coordinator's results (or err, for the whole request) for those it
// decided.
func (p commitPlan) answer(results []group.PartitionError, err error, fn func(topic int, partition int32, code int16)) {
	next := 0
	for ti, t := range p.topics {
		for pi, o := range t.offsets {
			code := p.codes[ti][pi]
			if code == -1 {
				if err != nil {
					code = ErrorCode(err)
				} else {
					code = ErrorCode(results[next].Err)
				}
				next++
			}
			fn(ti, o.Partition, code)
		}
	}
}

// leaderEpochOrUnknown is the committed offset's leader epoch, -1 before
// v6 (which did not carry one).
func leaderEpochOrUnknown(version int16, epoch int32) int32 {
	if version < 6 {
		return -1
	}
	return epoch
}
