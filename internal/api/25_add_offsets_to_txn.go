package api

// AddOffsetsToTxn: versions 0-3. Adds the group's __consumer_offsets
// partition to the producer's transaction, so the offsets it then commits
// with TxnOffsetCommit get its markers. WRITE on the transactional id and
// READ on the group are required. PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH before v2 (KIP-588).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/txn"
)

func init() {
	register(Spec{Key: 25, MinVersion: 0, MaxVersion: 3, Handle: handleAddOffsetsToTxn})
}

func handleAddOffsetsToTxn(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	answer := func(code int16) {
		resp.ErrorCode = code
		respond(resp)
	}
	switch {
	case !s.allowed(r, authz.OpWrite, authz.ResourceTransactionalID, req.TransactionalID):
		answer(kerr.TransactionalIDAuthorizationFailed.Code)
		return
	case !s.allowed(r, authz.OpRead, authz.ResourceGroup, req.Group):
		answer(kerr.GroupAuthorizationFailed.Code)
		return
	case req.Group == "":
		answer(kerr.InvalidGroupID.Code)
		return
	}
	// The group's partition needs __consumer_offsets' partition count.
	s.Backend.Groups().EnsureOffsetsTopic(func(err error) {
		t, ok := s.Backend.Image().Topic(OffsetsTopic)
		if err != nil || !ok || len(t.Partitions) == 0 {
			answer(kerr.CoordinatorNotAvailable.Code)
			return
		}
		tp := txn.TopicPartition{Topic: OffsetsTopic, Partition: group.PartitionFor(req.Group, int32(len(t.Partitions)))}
		s.Backend.Txns().AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp}, func(err error) {
			answer(txnErrorCode(r.Version, err, 2))
		})
	})
}
