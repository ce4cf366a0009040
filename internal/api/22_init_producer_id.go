package api

// InitProducerId: versions 0-4. Without a transactional id: a fresh
// idempotent producer id with epoch 0 (v3+ may name an existing producer
// id and epoch to bump after a fatal error, KIP-360; a fresh id serves an
// idempotent producer just the same). With one: the transaction
// coordinator of the id (this broker must lead its __transaction_state
// partition) fences older epochs, bumps the epoch of a producer that
// recovers (KIP-360) and rotates the producer id when the epoch is
// exhausted; WRITE on the transactional id is required.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/txn"
)

func init() {
	register(Spec{Key: 22, MinVersion: 0, MaxVersion: 4, Handle: handleInitProducerID, Blocking: true})
}

func handleInitProducerID(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID = -1
	resp.ProducerEpoch = -1
	if req.TransactionalID != nil {
		initTransactional(s, r, req, resp, respond)
		return
	}
	// An idempotent producer needs IDEMPOTENT_WRITE on the cluster, or
	// WRITE on some topic (Kafka's authorizeByResourceType, KIP-679).
	if !s.allowedQuiet(r, authz.OpIdempotentWrite, authz.ResourceCluster, authz.ClusterName) &&
		!s.allowedAnyOf(r, authz.OpWrite, authz.ResourceTopic) {
		s.denied(authz.ResourceCluster)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		respond(resp)
		return
	}
	id, err := s.Backend.AllocateProducerID()
	if err != nil {
		resp.ErrorCode = ErrorCode(err)
		respond(resp)
		return
	}
	resp.ProducerID = id
	resp.ProducerEpoch = 0
	respond(resp)
}

func initTransactional(s *Server, r *Request, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse, respond Respond) {
	id := *req.TransactionalID
	if !s.allowed(r, authz.OpWrite, authz.ResourceTransactionalID, id) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		respond(resp)
		return
	}
	in := txn.InitRequest{TransactionalID: id, TimeoutMs: req.TransactionTimeoutMillis, ProducerID: -1, Epoch: -1}
	if r.Version >= 3 {
		in.ProducerID, in.Epoch = req.ProducerID, req.ProducerEpoch
	}
	s.Backend.Txns().InitProducerID(in, func(res txn.InitResult) {
		if res.Err != nil {
			resp.ErrorCode = txnErrorCode(r.Version, res.Err, 4)
			respond(resp)
			return
		}
		resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.Epoch
		respond(resp)
	})
}

// txnErrorCode is err's code for a transactional request of version v:
// PRODUCER_FENCED (KIP-588) is answered as INVALID_PRODUCER_EPOCH to
// versions before fencedFrom, which older clients know, as Kafka does.
func txnErrorCode(v int16, err error, fencedFrom int16) int16 {
	code := ErrorCode(err)
	if code == kerr.ProducerFenced.Code && v < fencedFrom {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}
