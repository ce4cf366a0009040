package api

// DescribeTransactions: version 0 (KIP-664). The state of each named
// transactional id this broker coordinates; DESCRIBE on the id is
// required, and the partitions of topics the principal may not DESCRIBE
// are left out, as Kafka does.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
)

func init() {
	register(Spec{Key: 65, MinVersion: 0, MaxVersion: 0, Handle: handleDescribeTransactions})
}

// maxDescribedTxns bounds one request.
const maxDescribedTxns = 10_000

func handleDescribeTransactions(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for i, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		if i >= maxDescribedTxns {
			st.ErrorCode = kerr.InvalidRequest.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		if !s.allowed(r, authz.OpDescribe, authz.ResourceTransactionalID, id) {
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		t, err := s.Backend.Txns().DescribeTransaction(id)
		if err != nil {
			st.ErrorCode = ErrorCode(err)
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st.State, st.TimeoutMillis, st.StartTimestamp = t.State.String(), t.TimeoutMs, t.StartMs
		st.ProducerID, st.ProducerEpoch = t.ProducerID, t.Epoch
		allowed := map[string]bool{}
		for _, tp := range t.Partitions {
			ok, seen := allowed[tp.Topic]
			if !seen {
				ok = s.allowedQuiet(r, authz.OpDescribe, authz.ResourceTopic, tp.Topic)
				allowed[tp.Topic] = ok
			}
			if !ok {
				continue
			}
			if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
				rt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				rt.Topic = tp.Topic
				st.Topics = append(st.Topics, rt)
			}
			last := &st.Topics[len(st.Topics)-1]
			last.Partitions = append(last.Partitions, tp.Partition)
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	respond(resp)
}
