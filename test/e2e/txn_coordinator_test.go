package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/rpc"
)

// The transaction coordinator's APIs, driven with kmsg through a franz-go
// client (which finds the coordinator with FindCoordinator key type 1).
// The partition side (transactional produce, WriteTxnMarkers on leaders)
// is not in this branch, so a franz-go transactional producer cannot run
// end to end yet; markers to a deleted topic are complete by definition,
// which lets a transaction complete here.

func initTxnProducer(ctx context.Context, t *testing.T, cl *kgo.Client, id string, timeoutMs int32, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), timeoutMs
	req.ProducerID, req.ProducerEpoch = pid, epoch
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("InitProducerId: %v", err)
	}
	return resp
}

func addTxnPartitions(ctx context.Context, t *testing.T, cl *kgo.Client, id string, pid int64, epoch int16, topic string, parts ...int32) map[int32]int16 {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("AddPartitionsToTxn: %v", err)
	}
	codes := map[int32]int16{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			codes[p.Partition] = p.ErrorCode
		}
	}
	return codes
}

func endTxn(ctx context.Context, t *testing.T, cl *kgo.Client, id string, pid int64, epoch int16, commit bool) int16 {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("EndTxn: %v", err)
	}
	return resp.ErrorCode
}

func describeTxn(ctx context.Context, t *testing.T, cl *kgo.Client, id string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.TransactionStates) != 1 {
		t.Fatalf("DescribeTransactions: %v (%d states)", err, len(resp.TransactionStates))
	}
	return resp.TransactionStates[0]
}

// awaitTxnState re-describes the id until cond holds.
func awaitTxnState(ctx context.Context, t *testing.T, cl *kgo.Client, id string, cond func(kmsg.DescribeTransactionsResponseTransactionState) bool) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	for {
		st := describeTxn(ctx, t, cl, id)
		if cond(st) {
			return st
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: the state never came; last: %+v", id, st)
		case <-time.After(externalPollInterval):
		}
	}
}

func TestTxnCoordinatorLifecycle(t *testing.T) {
	tb := startBroker(t)
	ctx := testContext(t, 45*time.Second)
	tb.createTopic("out", 2, nil)
	tb.createTopic("doomed", 1, nil)
	cl := tb.client()
	useTransactionVersion1(ctx, t, cl, 1) // version 1's rules: the epoch stays at EndTxn

	if resp := initTxnProducer(ctx, t, cl, "tx", 10*60*60*1000, -1, -1); resp.ErrorCode != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("timeout above transaction.max.timeout.ms: code %d", resp.ErrorCode)
	}
	p := initTxnProducer(ctx, t, cl, "tx", 60_000, -1, -1)
	if p.ErrorCode != 0 || p.ProducerID < 0 || p.ProducerEpoch != 0 {
		t.Fatalf("InitProducerId: %+v", p)
	}
	if st := describeTxn(ctx, t, cl, "tx"); st.State != "Empty" || st.ProducerID != p.ProducerID {
		t.Fatalf("after init: %+v", st)
	}

	// Unknown topics are refused, the rest not attempted.
	codes := addTxnPartitions(ctx, t, cl, "tx", p.ProducerID, p.ProducerEpoch, "nosuch", 0)
	if codes[0] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %v", codes)
	}
	codes = addTxnPartitions(ctx, t, cl, "tx", p.ProducerID, p.ProducerEpoch, "doomed", 0)
	if codes[0] != 0 {
		t.Fatalf("add doomed-0: %v", codes)
	}
	// A stale epoch is fenced (INVALID_PRODUCER_EPOCH below v2, KIP-588).
	if codes := addTxnPartitions(ctx, t, cl, "tx", p.ProducerID, p.ProducerEpoch+1, "out", 0); codes[0] != kerr.ProducerFenced.Code {
		t.Fatalf("wrong epoch: %v", codes)
	}
	st := describeTxn(ctx, t, cl, "tx")
	if st.State != "Ongoing" || len(st.Topics) != 1 || st.Topics[0].Topic != "doomed" || st.StartTimestamp <= 0 {
		t.Fatalf("ongoing: %+v", st)
	}
	// A leader's v4 verify-only check (KIP-890 part 1): doomed-0 is in
	// the transaction, out-0 is not; another epoch is fenced.
	verify := func(epoch int16) []int16 {
		conn, err := rpc.Dial(ctx, tb.addr, "e2e-verify")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.SetVersion(4)
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "tx", p.ProducerID, epoch, true
		for _, name := range []string{"doomed", "out"} {
			tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			tt.Topic, tt.Partitions = name, []int32{0}
			tx.Topics = append(tx.Topics, tt)
		}
		req.Transactions = append(req.Transactions, tx)
		resp, err := conn.Request(ctx, req)
		if err != nil {
			t.Fatalf("AddPartitionsToTxn v4: %v", err)
		}
		var codes []int16
		for _, rt := range resp.(*kmsg.AddPartitionsToTxnResponse).Transactions[0].Topics {
			codes = append(codes, rt.Partitions[0].ErrorCode)
		}
		return codes
	}
	if codes := verify(p.ProducerEpoch); !slices.Equal(codes, []int16{0, kerr.InvalidTxnState.Code}) {
		t.Fatalf("verify: %v", codes)
	}
	if codes := verify(p.ProducerEpoch + 1); !slices.Equal(codes, []int16{kerr.ProducerFenced.Code, kerr.ProducerFenced.Code}) {
		t.Fatalf("verify with another epoch: %v", codes)
	}

	adm := kadm.NewClient(cl)
	listed, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
	if err != nil {
		t.Fatalf("ListTransactions: %v", err)
	}
	if _, ok := listed["tx"]; !ok || len(listed) != 1 {
		t.Fatalf("ListTransactions: %v", listed)
	}

	if code := endTxn(ctx, t, cl, "tx", p.ProducerID, p.ProducerEpoch, true); code != 0 {
		t.Fatalf("EndTxn: code %d", code)
	}
	if code := endTxn(ctx, t, cl, "tx", p.ProducerID, p.ProducerEpoch, false); code != kerr.InvalidTxnState.Code && code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("abort after commit: code %d", code)
	}
	// The transaction is PrepareCommit until the marker is on doomed-0
	// (then CompleteCommit), across a restart too: the new coordinator
	// replays it and sends the markers again. Without a partition leader
	// that takes markers it stays prepared until the partition is gone,
	// which completes it.
	committing := func(st kmsg.DescribeTransactionsResponseTransactionState) bool {
		return st.ErrorCode == 0 && (st.State == "PrepareCommit" || st.State == "CompleteCommit")
	}
	if st := describeTxn(ctx, t, cl, "tx"); !committing(st) {
		t.Fatalf("after EndTxn: %+v", st)
	}
	tb.restart()
	cl = tb.client()
	st = awaitTxnState(ctx, t, cl, "tx", func(st kmsg.DescribeTransactionsResponseTransactionState) bool { return st.ErrorCode == 0 })
	if !committing(st) {
		t.Fatalf("after a restart: %+v", st)
	}
	if st.State == "PrepareCommit" {
		if resp := initTxnProducer(ctx, t, cl, "tx", 60_000, -1, -1); resp.ErrorCode != kerr.ConcurrentTransactions.Code {
			t.Fatalf("InitProducerId while committing: code %d", resp.ErrorCode)
		}
	}
	if _, err := kadm.NewClient(cl).DeleteTopics(ctx, "doomed"); err != nil {
		t.Fatalf("delete doomed: %v", err)
	}
	awaitTxnState(ctx, t, cl, "tx", func(st kmsg.DescribeTransactionsResponseTransactionState) bool { return st.State == "CompleteCommit" })
	if code := endTxn(ctx, t, cl, "tx", p.ProducerID, p.ProducerEpoch, true); code != 0 {
		t.Fatalf("retried commit: code %d", code)
	}

	// A new producer with the id fences the first.
	p2 := initTxnProducer(ctx, t, cl, "tx", 60_000, -1, -1)
	if p2.ErrorCode != 0 || p2.ProducerID != p.ProducerID || p2.ProducerEpoch != p.ProducerEpoch+1 {
		t.Fatalf("second producer: %+v", p2)
	}
	if code := endTxn(ctx, t, cl, "tx", p.ProducerID, p.ProducerEpoch, true); code != kerr.ProducerFenced.Code {
		t.Fatalf("fenced producer's EndTxn: code %d", code)
	}
	// KIP-360: the second producer bumps its own epoch after an error.
	p3 := initTxnProducer(ctx, t, cl, "tx", 60_000, p2.ProducerID, p2.ProducerEpoch)
	if p3.ErrorCode != 0 || p3.ProducerEpoch != p2.ProducerEpoch+1 {
		t.Fatalf("epoch bump: %+v", p3)
	}
}

func TestTxnFindCoordinator(t *testing.T) {
	tb := startBroker(t)
	ctx := testContext(t, 30*time.Second)
	cl := tb.client()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 1
	req.CoordinatorKeys = []string{"a", ""}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Coordinators) != 2 {
		t.Fatalf("FindCoordinator: %v %+v", err, resp)
	}
	// franz-go may split the keys over requests: match answers by key.
	byKey := map[string]kmsg.FindCoordinatorResponseCoordinator{}
	for _, c := range resp.Coordinators {
		byKey[c.Key] = c
	}
	if c := byKey["a"]; c.ErrorCode != 0 || c.NodeID != 1 {
		t.Fatalf("coordinator of a: %+v", c)
	}
	if c := byKey[""]; c.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("empty transactional id: %+v", c)
	}
	// The first request created __transaction_state with Kafka's
	// properties (the replication factor capped at the one node).
	adm := kadm.NewClient(cl)
	cfgs, err := adm.DescribeTopicConfigs(ctx, "__transaction_state")
	if err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	rc, err := cfgs.On("__transaction_state", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cleanup.policy": "compact", "min.insync.replicas": "1", "segment.bytes": "104857600"}
	for _, c := range rc.Configs {
		if v, ok := want[c.Key]; ok {
			if c.MaybeValue() != v {
				t.Errorf("%s = %s, want %s", c.Key, c.MaybeValue(), v)
			}
			delete(want, c.Key)
		}
	}
	if len(want) != 0 {
		t.Errorf("configs missing: %v", want)
	}
	topics, err := adm.ListTopicsWithInternal(ctx, "__transaction_state")
	if err != nil || len(topics["__transaction_state"].Partitions) != 50 {
		t.Fatalf("__transaction_state: %v, %d partitions", err, len(topics["__transaction_state"].Partitions))
	}
}
