package txnverify

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/txn"
)

// result collects a verification's answer.
type result struct {
	errs []error
	n    int
}

func (r *result) done(errs []error) { r.errs, r.n = errs, r.n+1 }

func tps(parts ...int32) []txn.TopicPartition {
	var out []txn.TopicPartition
	for _, p := range parts {
		out = append(out, txn.TopicPartition{Topic: "t", Partition: p})
	}
	return out
}

func verification(id string, pid int64, epoch int16, r *result, parts ...int32) Verification {
	return Verification{TransactionalID: id, ProducerID: pid, Epoch: epoch, Partitions: tps(parts...), Done: r.done}
}

func complete(rd Ready) {
	for _, c := range rd.Completions {
		c.Done(c.Errs)
	}
}

// answer builds the coordinator's response to req with code(id,
// partition) per partition.
func answer(req *kmsg.AddPartitionsToTxnRequest, code func(id string, p int32) int16) *kmsg.AddPartitionsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	for _, t := range req.Transactions {
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = t.TransactionalID
		for _, tt := range t.Topics {
			ot := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			ot.Topic = tt.Topic
			for _, p := range tt.Partitions {
				op := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				op.Partition, op.ErrorCode = p, code(t.TransactionalID, p)
				ot.Partitions = append(ot.Partitions, op)
			}
			rt.Topics = append(rt.Topics, ot)
		}
		resp.Transactions = append(resp.Transactions, rt)
	}
	return resp
}

func code(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if err == nil {
		return 0
	}
	return -1
}

// One request in flight per coordinator; what arrives meanwhile goes in
// the next one, a second verification of the same producer joins the
// waiting entry, and each waiter gets its own partitions' outcomes.
func TestBatchingPerCoordinator(t *testing.T) {
	m := New(Config{})
	var a, b, c, d result
	rd := m.Verify(verification("a", 1, 0, &a, 0, 1), 7, nil, 0)
	if len(rd.Sends) != 1 || rd.Sends[0].Node != 7 || len(rd.Completions) != 0 {
		t.Fatalf("first verification: %+v", rd)
	}
	first := rd.Sends[0]
	if v := first.Request.GetVersion(); v != RequestVersion || !first.Request.Transactions[0].VerifyOnly {
		t.Fatalf("request version %d, verify-only %v", v, first.Request.Transactions[0].VerifyOnly)
	}
	// Another coordinator is independent.
	if rd := m.Verify(verification("d", 4, 0, &d, 2), 8, nil, 0); len(rd.Sends) != 1 || rd.Sends[0].Node != 8 {
		t.Fatalf("other coordinator: %+v", rd)
	}
	if rd := m.Verify(verification("b", 2, 0, &b, 2), 7, nil, 0); len(rd.Sends) != 0 {
		t.Fatalf("second verification sent while one is in flight: %+v", rd)
	}
	if rd := m.Verify(verification("b", 2, 0, &c, 0, 2), 7, nil, 0); len(rd.Sends)+len(rd.Completions) != 0 {
		t.Fatalf("same producer's verification did not join: %+v", rd)
	}
	if m.Waiting() != 3 {
		t.Fatalf("waiting %d, want 3", m.Waiting())
	}
	// a: partition 1 is not in its transaction.
	rd = m.Answered(7, first.ID, answer(first.Request, func(_ string, p int32) int16 {
		if p == 1 {
			return kerr.InvalidTxnState.Code
		}
		return 0
	}), nil, 0)
	if len(rd.Sends) != 1 || len(rd.Sends[0].Request.Transactions) != 1 {
		t.Fatalf("next request: %+v", rd.Sends)
	}
	complete(rd)
	if a.n != 1 || code(a.errs[0]) != 0 || code(a.errs[1]) != kerr.InvalidTxnState.Code {
		t.Fatalf("a: %v", a.errs)
	}
	next := rd.Sends[0]
	if got := next.Request.Transactions[0].Topics[0].Partitions; len(got) != 2 || got[0] != 2 || got[1] != 0 {
		t.Fatalf("b's partitions: %v, want the union [2 0]", got)
	}
	// A stale answer is ignored.
	if rd := m.Answered(7, first.ID, answer(first.Request, func(string, int32) int16 { return 0 }), nil, 0); len(rd.Completions) != 0 {
		t.Fatalf("stale answer completed: %+v", rd)
	}
	// b: fenced at the coordinator, which producers expect from Produce
	// as INVALID_PRODUCER_EPOCH.
	complete(m.Answered(7, next.ID, answer(next.Request, func(string, int32) int16 { return kerr.ProducerFenced.Code }), nil, 0))
	if b.n != 1 || len(b.errs) != 1 || code(b.errs[0]) != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("b: %v", b.errs)
	}
	if c.n != 1 || len(c.errs) != 2 || code(c.errs[0]) != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("c: %v", c.errs)
	}
	if m.Waiting() != 1 {
		t.Fatalf("waiting %d, want d's 1", m.Waiting())
	}
}

// Epochs: an older one than the one waiting is refused at once; a newer
// one replaces it, and the waiting one is refused.
func TestNewerEpochReplacesWaiting(t *testing.T) {
	m := New(Config{})
	var a, old, cur, newer result
	m.Verify(verification("x", 1, 0, &a, 0), 1, nil, 0) // in flight
	m.Verify(verification("y", 5, 3, &cur, 0), 1, nil, 0)
	complete(m.Verify(verification("y", 5, 2, &old, 1), 1, nil, 0))
	if old.n != 1 || code(old.errs[0]) != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("older epoch: %v", old.errs)
	}
	complete(m.Verify(verification("y", 5, 4, &newer, 2), 1, nil, 0))
	if cur.n != 1 || code(cur.errs[0]) != kerr.InvalidProducerEpoch.Code || newer.n != 0 {
		t.Fatalf("replaced: %v, newer answered %d times", cur.errs, newer.n)
	}
}

// Transport failures and top-level errors answer every partition; the
// brokers' CLUSTER_AUTHORIZATION_FAILED is not shown to the client; a
// partition the answer leaves out is not verified.
func TestAnswerMapping(t *testing.T) {
	for _, tc := range []struct {
		name      string
		transport error
		top       int16
		drop      bool
		want      int16
	}{
		{name: "transport", transport: errors.New("connection reset"), want: kerr.NetworkException.Code},
		{name: "cluster authorization", top: kerr.ClusterAuthorizationFailed.Code, want: kerr.InvalidTxnState.Code},
		{name: "top-level", top: kerr.InvalidRequest.Code, want: kerr.InvalidRequest.Code},
		{name: "left out", drop: true, want: kerr.NetworkException.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(Config{})
			var r result
			s := m.Verify(verification("x", 1, 0, &r, 0, 1), 1, nil, 0).Sends[0]
			var resp *kmsg.AddPartitionsToTxnResponse
			if tc.transport == nil {
				resp = answer(s.Request, func(string, int32) int16 { return 0 })
				resp.ErrorCode = tc.top
				if tc.drop {
					resp.Transactions = nil
				}
			}
			complete(m.Answered(1, s.ID, resp, tc.transport, 0))
			if r.n != 1 || code(r.errs[0]) != tc.want || code(r.errs[1]) != tc.want {
				t.Fatalf("got %v, want code %d", r.errs, tc.want)
			}
		})
	}
}

// Limits and a failed coordinator lookup answer at once.
func TestLimitsAndLookup(t *testing.T) {
	m := New(Config{MaxWaitingPerCoordinator: 1, MaxPartitionsPerTxn: 2})
	var a, b, c, d, e result
	complete(m.Verify(verification("a", 1, 0, &a, 0), -1, kerr.CoordinatorNotAvailable, 0))
	if a.n != 1 || code(a.errs[0]) != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("lookup failure: %v", a.errs)
	}
	m.Verify(verification("b", 2, 0, &b, 0), 1, nil, 0) // in flight
	m.Verify(verification("c", 3, 0, &c, 0), 1, nil, 0) // waiting: the limit
	complete(m.Verify(verification("d", 4, 0, &d, 0), 1, nil, 0))
	if d.n != 1 || code(d.errs[0]) != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("over the waiting limit: %v", d.errs)
	}
	complete(m.Verify(verification("c", 3, 0, &e, 1, 2), 1, nil, 0))
	if e.n != 1 || code(e.errs[0]) != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("over the partition limit: %v", e.errs)
	}
}

// Kafka's mapping of a verification's outcome to the Produce answer.
func TestProduceError(t *testing.T) {
	for in, want := range map[*kerr.Error]*kerr.Error{
		kerr.InvalidTxnState:           kerr.InvalidTxnState,
		kerr.ConcurrentTransactions:    kerr.NotEnoughReplicas,
		kerr.CoordinatorLoadInProgress: kerr.NotEnoughReplicas,
		kerr.CoordinatorNotAvailable:   kerr.NotEnoughReplicas,
		kerr.NotCoordinator:            kerr.NotEnoughReplicas,
		kerr.InvalidProducerEpoch:      kerr.InvalidProducerEpoch,
		kerr.NetworkException:          kerr.NetworkException,
	} {
		if got := ProduceError(in, 10); !errors.Is(got, want) {
			t.Errorf("%v: got %v, want %v", in, got, want)
		}
	}
	if ProduceError(nil, 10) != nil {
		t.Error("nil is not verified")
	}
	// From Produce v11 a partition not in the transaction is
	// TRANSACTION_ABORTABLE; the rest stays.
	for v, want := range map[int16]*kerr.Error{10: kerr.InvalidTxnState, 11: kerr.TransactionAbortable, 12: kerr.TransactionAbortable} {
		if got := ProduceError(kerr.InvalidTxnState, v); !errors.Is(got, want) {
			t.Errorf("v%d: got %v, want %v", v, got, want)
		}
	}
	if got := ProduceError(kerr.CoordinatorNotAvailable, 12); !errors.Is(got, kerr.NotEnoughReplicas) {
		t.Errorf("v12 coordinator not available: %v", got)
	}
}

// Kafka's conversion of a TxnOffsetCommit's verification outcome.
func TestOffsetCommitError(t *testing.T) {
	for in, want := range map[*kerr.Error]*kerr.Error{
		kerr.NetworkException:        kerr.CoordinatorLoadInProgress,
		kerr.NotEnoughReplicas:       kerr.CoordinatorNotAvailable,
		kerr.UnknownTopicOrPartition: kerr.CoordinatorNotAvailable,
		kerr.NotLeaderForPartition:   kerr.NotCoordinator,
		kerr.KafkaStorageError:       kerr.NotCoordinator,
		kerr.InvalidTxnState:         kerr.InvalidTxnState,
		kerr.InvalidProducerEpoch:    kerr.InvalidProducerEpoch,
		kerr.ConcurrentTransactions:  kerr.ConcurrentTransactions,
	} {
		if got := OffsetCommitError(in, 3); !errors.Is(got, want) {
			t.Errorf("%v: got %v, want %v", in, got, want)
		}
	}
	if got := OffsetCommitError(kerr.InvalidTxnState, 4); !errors.Is(got, kerr.TransactionAbortable) {
		t.Errorf("v4 not in the transaction: %v", got)
	}
}

// Transaction version 2: an adding verification goes as AddPartitionsToTxn
// v5 with VerifyOnly false; a verify-only one of the same producer and
// epoch does not join it; a v5 coordinator's TRANSACTION_ABORTABLE is
// "not in the transaction".
func TestAddingForTransactionVersion2(t *testing.T) {
	m := New(Config{})
	var a, b, c result
	v := verification("a", 1, 0, &a, 0)
	v.Add = true
	rd := m.Verify(v, 7, nil, 0)
	if len(rd.Sends) != 1 {
		t.Fatalf("adding: %+v", rd)
	}
	req := rd.Sends[0].Request
	if req.GetVersion() != AddRequestVersion || req.Transactions[0].VerifyOnly {
		t.Fatalf("adding request v%d, verify-only %v", req.GetVersion(), req.Transactions[0].VerifyOnly)
	}
	// Waiting behind it: an adding and a verify-only entry of the same
	// producer and epoch.
	v2 := verification("b", 2, 3, &b, 1)
	v2.Add = true
	m.Verify(v2, 7, nil, 0)
	complete(m.Verify(verification("b", 2, 3, &c, 2), 7, nil, 0))
	if c.n != 1 || code(c.errs[0]) != kerr.ConcurrentTransactions.Code {
		t.Fatalf("verify-only joining an add: %v", c.errs)
	}
	rd = m.Answered(7, rd.Sends[0].ID, answer(req, func(string, int32) int16 { return kerr.TransactionAbortable.Code }), nil, 0)
	complete(rd)
	if a.n != 1 || code(a.errs[0]) != kerr.InvalidTxnState.Code {
		t.Fatalf("TRANSACTION_ABORTABLE answer: %v", a.errs)
	}
	if len(rd.Sends) != 1 || rd.Sends[0].Request.GetVersion() != AddRequestVersion {
		t.Fatalf("next request: %+v", rd.Sends)
	}
}

// KAFKA-18654: an add answered CONCURRENT_TRANSACTIONS (the previous
// transaction's markers still being written) is asked again after the
// backoff until add.partitions.to.txn.retry.backoff.max.ms, then answered
// with the error; a verification (not an add) is never retried.
func TestAddRetriedWhileConcurrent(t *testing.T) {
	m := New(Config{AddRetryBackoffMs: 20, AddRetryMaxMs: 100})
	concurrent := func(string, int32) int16 { return kerr.ConcurrentTransactions.Code }
	var a result
	v := verification("a", 1, 0, &a, 0)
	v.Add = true
	now := int64(1000)
	rd := m.Verify(v, 7, nil, now)
	for attempt := 0; ; attempt++ {
		rd = m.Answered(7, rd.Sends[0].ID, answer(rd.Sends[0].Request, concurrent), nil, now)
		complete(rd)
		if len(rd.Retries) == 0 {
			break
		}
		if a.n != 0 || rd.Retries[0].AfterMs != 20 || rd.Retries[0].V.StartMs != 1000 {
			t.Fatalf("attempt %d: %+v, answered %d", attempt, rd.Retries, a.n)
		}
		now += rd.Retries[0].AfterMs
		rd = m.Verify(rd.Retries[0].V, 7, nil, now)
	}
	if a.n != 1 || code(a.errs[0]) != kerr.ConcurrentTransactions.Code || now-1000 > 100 || now-1000 < 80 {
		t.Fatalf("after %d ms: answered %d times, %v", now-1000, a.n, a.errs)
	}
	var b result
	rd = m.Verify(verification("b", 2, 0, &b, 0), 7, nil, now)
	rd = m.Answered(7, rd.Sends[0].ID, answer(rd.Sends[0].Request, concurrent), nil, now)
	complete(rd)
	if len(rd.Retries) != 0 || b.n != 1 {
		t.Fatalf("a verification retried: %+v", rd.Retries)
	}
}
