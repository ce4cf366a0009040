package api

// TxnOffsetCommit: versions 0-5 (v3 is flexible and adds the member id,
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
// COORDINATOR_NOT_AVAILABLE as OffsetCommit does. With
// transaction.partition.verification.enable (KIP-890 part 1) the group's
// __consumer_offsets partition must be in the producer's ongoing
// transaction at its coordinator first (verifyTxnOffsets): else
// INVALID_TXN_STATE (TRANSACTION_ABORTABLE from v4, which adds that error,
// as Kafka). v5 with transaction.version 2 (KIP-890 part 2) adds the
// partition to the transaction itself, Kafka's implicit AddOffsetsToTxn:
// the client sends none.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/txn"
	"github.com/skein-log/skein/internal/txnverify"
)

func init() {
	register(Spec{Key: 28, MinVersion: 0, MaxVersion: 5, Handle: handleTxnOffsetCommit})
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
	topics := make([]commitTopic, len(req.Topics))
	for i, t := range req.Topics {
		topics[i].name = t.Topic
		for _, p := range t.Partitions {
			epoch := p.LeaderEpoch
			if r.Version < 2 {
				epoch = -1 // v2 added it
			}
			topics[i].offsets = append(topics[i].offsets, group.CommitOffset{
				Topic: t.Topic, Partition: p.Partition, Offset: p.Offset,
				LeaderEpoch: epoch, Metadata: deref(p.Metadata),
			})
		}
	}
	plan := s.planCommit(r, whole, topics)
	answer := func(results []group.PartitionError, err error) {
		resp.Topics = make([]kmsg.TxnOffsetCommitResponseTopic, len(req.Topics))
		for i, t := range req.Topics {
			resp.Topics[i] = kmsg.NewTxnOffsetCommitResponseTopic()
			resp.Topics[i].Topic = t.Topic
		}
		plan.answer(results, err, func(ti int, p int32, code int16) {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, rp)
		})
		respond(resp)
	}
	if len(plan.commit) == 0 {
		answer(nil, nil)
		return
	}
	creq := group.TxnCommitRequest{
		GroupID:       req.Group,
		ProducerID:    req.ProducerID,
		ProducerEpoch: req.ProducerEpoch,
		Generation:    -1,
		Offsets:       plan.commit,
	}
	if r.Version >= 3 {
		creq.MemberID, creq.InstanceID, creq.Generation = req.MemberID, deref(req.InstanceID), req.Generation
	}
	tv2 := r.Version >= 5 && s.Backend.Image().TransactionVersion() >= 2
	if !tv2 && !s.Backend.Config().TransactionPartitionVerification {
		s.Backend.Groups().TxnCommitOffsets(creq, answer)
		return
	}
	s.verifyTxnOffsets(req.TransactionalID, &creq, tv2, func(err error) {
		if err != nil {
			answer(nil, txnverify.OffsetCommitError(err, r.Version))
			return
		}
		s.Backend.Groups().TxnCommitOffsets(creq, answer)
	})
}

// verifyTxnOffsets is KIP-890 part 1 for TxnOffsetCommit, as Kafka's
// group coordinator does it: the group's __consumer_offsets partition
// (led here when this broker is the group coordinator) must be in the
// producer's ongoing transaction (AddOffsetsToTxn added it) before the
// offsets are written as the transaction's batch; the write then carries
// the verification's guard, so a marker that ends the transaction in
// between makes the leader refuse it. done(nil) lets the commit go on.
// tv2 (v5 with transaction.version 2, KIP-890 part 2) adds the partition
// to the transaction instead: the client sent no AddOffsetsToTxn.
func (s *Server) verifyTxnOffsets(id string, creq *group.TxnCommitRequest, tv2 bool, done func(error)) {
	t, ok := s.Backend.Image().Topic(OffsetsTopic)
	if !ok || len(t.Partitions) == 0 {
		done(fmt.Errorf("%w: %s does not exist", kerr.CoordinatorNotAvailable, OffsetsTopic))
		return
	}
	part := group.PartitionFor(creq.GroupID, int32(len(t.Partitions)))
	guard, need, err := s.Backend.StartTxnVerification(t.ID, part, creq.ProducerID, creq.ProducerEpoch, tv2)
	if err != nil {
		done(err)
		return
	}
	creq.VerifyTxn, creq.VerificationGuard = true, guard
	if !need {
		done(nil)
		return
	}
	s.Backend.VerifyTxn(txnverify.Verification{
		TransactionalID: id, ProducerID: creq.ProducerID, Epoch: creq.ProducerEpoch,
		Partitions: []txn.TopicPartition{{Topic: OffsetsTopic, Partition: part}}, Add: tv2,
		Done: func(errs []error) {
			if len(errs) != 1 {
				done(fmt.Errorf("%w: no verification answer", kerr.NetworkException))
				return
			}
			done(errs[0])
		},
	})
}
