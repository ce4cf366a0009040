package api

// EndTxn: versions 0-5. Commits or aborts the producer's transaction:
// answered once the PrepareCommit or PrepareAbort state is committed; the
// coordinator then writes the markers and completes it. WRITE on the
// transactional id is required. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH
// before v2 (KIP-588).
//
// v5 with transaction.version 2 finalized is KIP-890 part 2's: the end
// bumps the producer epoch (txn.Coordinator.EndTxnV2) and the answer
// carries the producer id and epoch the client goes on with. Below
// transaction.version 2 a v5 request ends the transaction as before and
// answers producer id and epoch -1 (clients only send v5 once they see
// level 2 finalized: franz-go pins v4 otherwise).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/txn"
)

func init() {
	register(Spec{Key: 26, MinVersion: 0, MaxVersion: 5, Handle: handleEndTxn})
}

func handleEndTxn(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if !s.allowed(r, authz.OpWrite, authz.ResourceTransactionalID, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		respond(resp)
		return
	}
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if r.Version >= 5 && s.Backend.Image().TransactionVersion() >= 2 {
		s.Backend.Txns().EndTxnV2(txn.EndRequest{TransactionalID: req.TransactionalID, ProducerID: req.ProducerID,
			Epoch: req.ProducerEpoch, Commit: req.Commit}, func(res txn.EndResult) {
			resp.ErrorCode = txnErrorCode(r.Version, res.Err, 2)
			if res.Err == nil {
				resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.Epoch
			}
			respond(resp)
		})
		return
	}
	s.Backend.Txns().EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, func(err error) {
		resp.ErrorCode = txnErrorCode(r.Version, err, 2)
		respond(resp)
	})
}
