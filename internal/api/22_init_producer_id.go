package api

// InitProducerId: versions 0-4, without transactions. A request without a
// transactional id gets a fresh producer id with epoch 0. v3+ may name an
// existing producer id and epoch to bump after a fatal error (KIP-360); we
// answer with a fresh id, which the client accepts just the same.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
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
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		respond(resp)
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
