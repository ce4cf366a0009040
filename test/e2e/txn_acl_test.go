package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startTxnACLCluster starts the ACL cluster with a client of the brokers'
// principal (allowed everything) and a topic of partitions partitions.
func startTxnACLCluster(ctx context.Context, t *testing.T, topic string, partitions int32) (*testCluster, *kgo.Client, *kadm.Client) {
	t.Helper()
	c := startACLCluster(t)
	brokerCl, err := kgo.NewClient(kgo.SeedBrokers(replicationAddrs(c)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(brokerCl.Close)
	admin := kadm.NewClient(brokerCl)
	if _, err := admin.CreateTopic(ctx, partitions, 3, nil, topic); err != nil {
		t.Fatalf("create: %v", err)
	}
	return c, brokerCl, admin
}

// TestTxnACLs: Kafka's checks on transactional ids. FindCoordinator and
// DescribeTransactions need DESCRIBE on the id, InitProducerId,
// AddPartitionsToTxn and EndTxn WRITE, and each added partition WRITE on
// its topic; ListTransactions shows only the ids one may DESCRIBE.
func TestTxnACLs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, brokerCl, admin := startTxnACLCluster(ctx, t, "txn-out", 1)
	anon := c.client()

	init := func(id string) (*kmsg.InitProducerIDResponse, error) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60_000
		return req.RequestWith(ctx, anon)
	}
	// Without DESCRIBE the coordinator is not even found.
	if _, err := init("tx-a"); !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("InitProducerId without ACLs: %v", err)
	}
	mustCreateACLs(ctx, t, admin, kadm.NewACLs().Allow(anonymous).AllowHosts("*").TransactionalIDs("tx-").
		Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternPrefixed))
	awaitACLs(ctx, t, c, 1)
	if resp, err := init("tx-a"); err != nil || resp.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("InitProducerId with DESCRIBE only: %v %+v", err, resp)
	}
	mustCreateACLs(ctx, t, admin, kadm.NewACLs().Allow(anonymous).AllowHosts("*").TransactionalIDs("tx-a").
		Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	awaitACLs(ctx, t, c, 2)
	// The coordinator's partition needs min.insync.replicas (2) of its
	// three replicas; a retry covers a leader still loading.
	var p *kmsg.InitProducerIDResponse
	for {
		resp, err := init("tx-a")
		if err == nil && resp.ErrorCode == 0 {
			p = resp
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("InitProducerId with WRITE: %v %+v", err, resp)
		case <-time.After(externalPollInterval):
		}
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "tx-a", p.ProducerID, p.ProducerEpoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "txn-out", []int32{0}
	add.Topics = append(add.Topics, at)
	resp, err := add.RequestWith(ctx, anon)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("AddPartitionsToTxn without WRITE on the topic: %v %+v", err, resp)
	}

	// A second id, which anonymous may not describe, is not listed to it.
	if _, err := brokerCl.Request(ctx, func() kmsg.Request {
		r := kmsg.NewPtrInitProducerIDRequest()
		r.TransactionalID, r.TransactionTimeoutMillis = kmsg.StringPtr("hidden"), 60_000
		return r
	}()); err != nil {
		t.Fatalf("InitProducerId of hidden: %v", err)
	}
	listed, err := kadm.NewClient(anon).ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatalf("ListTransactions: %v", err)
	}
	if _, ok := listed["tx-a"]; !ok || len(listed) != 1 {
		t.Fatalf("anonymous lists %v", listed.TransactionalIDs())
	}
	adminList, err := admin.ListTransactions(ctx, nil, nil)
	if err != nil || len(adminList) != 2 {
		t.Fatalf("broker principal lists %v: %v", adminList.TransactionalIDs(), err)
	}
}

// TestTxnOffsetCommitACLs: TxnOffsetCommit needs, as in Kafka, WRITE on
// the transactional id, then READ on the group (each refusal answered for
// every partition), then READ on each topic.
func TestTxnOffsetCommitACLs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, brokerCl, admin := startTxnACLCluster(ctx, t, "txo-in", 2)
	anon := c.client()
	// A real transaction with the group's offsets partition in it (the
	// broker principal may do it all): the leader of that partition
	// verifies it with the transaction coordinator (KIP-890 part 1).
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr("tx-o"), 60_000
	ir, err := init.RequestWith(ctx, brokerCl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", err, kerr.ErrorForCode(ir.ErrorCode))
	}
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "tx-o", ir.ProducerID, ir.ProducerEpoch, "g-o"
	if ar, err := ao.RequestWith(ctx, brokerCl); err != nil || ar.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v %+v", err, ar)
	}
	commit := func() []int16 {
		t.Helper()
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx-o", "g-o", ir.ProducerID, ir.ProducerEpoch
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "txo-in"
		for p := range int32(2) {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, 5
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		for {
			resp, err := req.RequestWith(ctx, anon)
			if err != nil {
				t.Fatalf("TxnOffsetCommit: %v", err)
			}
			codes := []int16{resp.Topics[0].Partitions[0].ErrorCode, resp.Topics[0].Partitions[1].ErrorCode}
			// The coordinator may still be loading, or its partition's ISR
			// below min.insync.replicas right after creation.
			if err := kerr.ErrorForCode(codes[0]); !errors.Is(err, kerr.CoordinatorLoadInProgress) && !errors.Is(err, kerr.CoordinatorNotAvailable) {
				return codes
			}
			select {
			case <-ctx.Done():
				t.Fatalf("TxnOffsetCommit: still %v", kerr.ErrorForCode(codes[0]))
			case <-time.After(externalPollInterval):
			}
		}
	}
	want := func(step string, code int16) {
		t.Helper()
		if got := commit(); got[0] != code || got[1] != code {
			t.Fatalf("%s: codes %v, want %v for both", step, got, kerr.ErrorForCode(code))
		}
	}
	// The client finds the group's coordinator first: DESCRIBE on the group.
	acls := 0
	grant := func(b *kadm.ACLBuilder) {
		t.Helper()
		mustCreateACLs(ctx, t, admin, b.Allow(anonymous).AllowHosts("*").ResourcePatternType(kadm.ACLPatternLiteral))
		acls++
		awaitACLs(ctx, t, c, acls)
	}
	grant(kadm.NewACLs().Groups("g-o").Operations(kadm.OpDescribe))
	want("no WRITE on the transactional id", kerr.TransactionalIDAuthorizationFailed.Code)
	grant(kadm.NewACLs().TransactionalIDs("tx-o").Operations(kadm.OpWrite))
	want("no READ on the group", kerr.GroupAuthorizationFailed.Code)
	grant(kadm.NewACLs().Groups("g-o").Operations(kadm.OpRead))
	want("no READ on the topic", kerr.TopicAuthorizationFailed.Code)
	grant(kadm.NewACLs().Topics("txo-in").Operations(kadm.OpRead))
	want("all granted", 0)
}
