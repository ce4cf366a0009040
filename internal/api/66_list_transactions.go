package api

// ListTransactions: versions 0-1 (KIP-664; v1 adds the duration filter of
// KIP-994). The transactional ids of the coordinators on this broker that
// the principal may DESCRIBE, filtered by state and producer id; unknown
// state names come back in UnknownStateFilters and match nothing.
// (v2's transactional id pattern, KIP-1152, is not served.)

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/txn"
)

func init() {
	register(Spec{Key: 66, MinVersion: 0, MaxVersion: 1, Handle: handleListTransactions})
}

func handleListTransactions(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	f := txn.ListFilter{ProducerIDs: req.ProducerIDFilters, MinDurationMs: -1}
	if r.Version >= 1 {
		f.MinDurationMs = req.DurationFilterMillis
	}
	for _, name := range req.StateFilters {
		st, ok := txn.ParseState(name)
		if !ok {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
			continue
		}
		f.States = append(f.States, st)
	}
	if len(req.StateFilters) > 0 && len(f.States) == 0 {
		respond(resp) // only unknown states: nothing matches
		return
	}
	txns, err := s.Backend.Txns().ListTransactions(f)
	resp.ErrorCode = ErrorCode(err)
	for _, t := range txns {
		if !s.allowedQuiet(r, authz.OpDescribe, authz.ResourceTransactionalID, t.ID) {
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = t.ID, t.ProducerID, t.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	respond(resp)
}
