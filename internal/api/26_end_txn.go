package api

// EndTxn: versions 0-4 (v5, KIP-890 part 2's epoch bump per transaction,
// is for clients that see transaction.version 2, which is not offered).
// Commits or aborts the producer's transaction: answered once the
// PrepareCommit or PrepareAbort state is committed; the coordinator then
// writes the markers and completes it. WRITE on the transactional id is
// required. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (KIP-588).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
)

func init() {
	register(Spec{Key: 26, MinVersion: 0, MaxVersion: 4, Handle: handleEndTxn})
}

func handleEndTxn(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if !s.allowed(r, authz.OpWrite, authz.ResourceTransactionalID, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		respond(resp)
		return
	}
	s.Backend.Txns().EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, func(err error) {
		resp.ErrorCode = txnErrorCode(r.Version, err, 2)
		respond(resp)
	})
}
