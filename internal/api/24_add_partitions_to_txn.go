package api

// AddPartitionsToTxn: versions 0-5. v0-v3 are a producer's: add its
// partitions to its ongoing transaction (WRITE on the transactional id and
// on each topic). v4 (KIP-890 part 1) is a partition leader's, batching
// several transactions; a VerifyOnly one only asks whether each partition
// is in the transaction already, before the leader appends a
// transactional batch; v4+ needs CLUSTER_ACTION on the cluster. v5 (KIP-890
// part 2) answers a partition not in the transaction with
// TRANSACTION_ABORTABLE, and with transaction.version 2 finalized its adds
// are a transaction version 2 client's (the leader's implicit add of
// Produce v12, the group coordinator's of TxnOffsetCommit v5).
// PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (KIP-588).

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/txn"
)

func init() {
	register(Spec{Key: 24, MinVersion: 0, MaxVersion: 5, Handle: handleAddPartitionsToTxn})
}

// maxTxnsPerVerify bounds the transactions of one v4 request.
const maxTxnsPerVerify = 10_000

// txnPartitions is one transaction's share of the request, in request
// order, with the code each partition gets unless the transaction is
// asked (0: not decided yet).
type txnPartitions struct {
	parts []txn.TopicPartition
	codes []int16
}

// byTopic walks the partitions, which are grouped by topic: newTopic at
// each topic's first, add for each partition.
func (p *txnPartitions) byTopic(newTopic func(topic string), add func(partition int32, code int16)) {
	for i, tp := range p.parts {
		if i == 0 || p.parts[i-1].Topic != tp.Topic {
			newTopic(tp.Topic)
		}
		add(tp.Partition, p.codes[i])
	}
}

// gatherTopics merges a request's topics (n of them, at gives the i-th)
// by name, in first-seen order.
func gatherTopics(n int, at func(i int) (string, []int32)) (map[string][]int32, []string) {
	topics, order := map[string][]int32{}, []string(nil)
	for i := range n {
		t, parts := at(i)
		if _, ok := topics[t]; !ok {
			order = append(order, t)
		}
		topics[t] = append(topics[t], parts...)
	}
	return topics, order
}

func (p *txnPartitions) setAll(code int16) {
	for i := range p.codes {
		p.codes[i] = code
	}
}

// checkTxnPartitions applies Kafka's checks before a producer's partitions
// reach the coordinator: WRITE on the transactional id, then on each
// topic, and the topic must exist; if any partition fails, the others are
// OPERATION_NOT_ATTEMPTED. ok is false when the request goes no further.
func (s *Server) checkTxnPartitions(r *Request, id string, topics map[string][]int32, order []string) (txnPartitions, bool) {
	var p txnPartitions
	for _, t := range order {
		for _, part := range topics[t] {
			p.parts = append(p.parts, txn.TopicPartition{Topic: t, Partition: part})
		}
	}
	p.codes = make([]int16, len(p.parts))
	if !s.allowed(r, authz.OpWrite, authz.ResourceTransactionalID, id) {
		p.setAll(kerr.TransactionalIDAuthorizationFailed.Code)
		return p, false
	}
	im := s.Backend.Image()
	failed := false
	allowed := map[string]bool{}
	for i, tp := range p.parts {
		ok, seen := allowed[tp.Topic]
		if !seen {
			ok = s.allowed(r, authz.OpWrite, authz.ResourceTopic, tp.Topic)
			allowed[tp.Topic] = ok
		}
		t, exists := im.Topic(tp.Topic)
		switch {
		case !ok:
			p.codes[i] = kerr.TopicAuthorizationFailed.Code
		case !exists || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions):
			p.codes[i] = kerr.UnknownTopicOrPartition.Code
		default:
			continue
		}
		failed = true
	}
	if failed {
		for i := range p.codes {
			if p.codes[i] == 0 {
				p.codes[i] = kerr.OperationNotAttempted.Code
			}
		}
		return p, false
	}
	return p, true
}

func handleAddPartitionsToTxn(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.AddPartitionsToTxnRequest)
	if r.Version >= 4 {
		addPartitionsBatched(s, r, req, respond)
		return
	}
	topics, order := gatherTopics(len(req.Topics), func(i int) (string, []int32) { return req.Topics[i].Topic, req.Topics[i].Partitions })
	answer := func(p txnPartitions) {
		resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		p.byTopic(func(topic string) {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = topic
			resp.Topics = append(resp.Topics, rt)
		}, func(partition int32, code int16) {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = partition, code
			last := &resp.Topics[len(resp.Topics)-1]
			last.Partitions = append(last.Partitions, rp)
		})
		respond(resp)
	}
	p, ok := s.checkTxnPartitions(r, req.TransactionalID, topics, order)
	if !ok {
		answer(p)
		return
	}
	s.Backend.Txns().AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, p.parts, func(err error) {
		p.setAll(txnErrorCode(r.Version, err, 2))
		answer(p)
	})
}

// addPartitionsBatched serves v4: each transaction is answered on its
// own; the response goes out once all are.
func addPartitionsBatched(s *Server, r *Request, req *kmsg.AddPartitionsToTxnRequest, respond Respond) {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	switch {
	case !s.allowedCluster(r, authz.OpClusterAction):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		respond(resp)
		return
	case len(req.Transactions) > maxTxnsPerVerify:
		resp.ErrorCode = kerr.InvalidRequest.Code
		respond(resp)
		return
	}
	resp.Transactions = make([]kmsg.AddPartitionsToTxnResponseTransaction, len(req.Transactions))
	var mu sync.Mutex
	left := len(req.Transactions) + 1
	done := func() {
		mu.Lock()
		left--
		last := left == 0
		mu.Unlock()
		if last {
			respond(resp)
		}
	}
	for i, rt := range req.Transactions {
		topics, order := gatherTopics(len(rt.Topics), func(i int) (string, []int32) { return rt.Topics[i].Topic, rt.Topics[i].Partitions })
		answer := func(p txnPartitions) {
			out := kmsg.NewAddPartitionsToTxnResponseTransaction()
			out.TransactionalID = rt.TransactionalID
			p.byTopic(func(topic string) {
				ot := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				ot.Topic = topic
				out.Topics = append(out.Topics, ot)
			}, func(partition int32, code int16) {
				op := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				op.Partition, op.ErrorCode = partition, code
				last := &out.Topics[len(out.Topics)-1]
				last.Partitions = append(last.Partitions, op)
			})
			mu.Lock()
			resp.Transactions[i] = out
			mu.Unlock()
			done()
		}
		p, ok := s.checkTxnPartitions(r, rt.TransactionalID, topics, order)
		switch {
		case !ok:
			answer(p)
		case rt.VerifyOnly:
			errs, err := s.Backend.Txns().VerifyPartitions(rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, p.parts)
			for j := range p.codes {
				if err != nil {
					p.codes[j] = ErrorCode(err)
				} else {
					p.codes[j] = ErrorCode(errs[j])
				}
				if r.Version >= 5 && p.codes[j] == kerr.InvalidTxnState.Code {
					p.codes[j] = kerr.TransactionAbortable.Code
				}
			}
			answer(p)
		case r.Version >= 5 && s.Backend.Image().TransactionVersion() >= 2:
			s.Backend.Txns().AddPartitionsV2(rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, p.parts, func(err error) {
				p.setAll(ErrorCode(err))
				answer(p)
			})
		default:
			s.Backend.Txns().AddPartitions(rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, p.parts, func(err error) {
				p.setAll(ErrorCode(err))
				answer(p)
			})
		}
	}
	done()
}
