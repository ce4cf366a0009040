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

// TestTxnACLs: Kafka's checks on transactional ids. FindCoordinator and
// DescribeTransactions need DESCRIBE on the id, InitProducerId,
// AddPartitionsToTxn and EndTxn WRITE, and each added partition WRITE on
// its topic; ListTransactions shows only the ids one may DESCRIBE.
func TestTxnACLs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := startACLCluster(t)
	brokerCl, err := kgo.NewClient(kgo.SeedBrokers(replicationAddrs(c)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(brokerCl.Close)
	admin := kadm.NewClient(brokerCl)
	if _, err := admin.CreateTopic(ctx, 1, 3, nil, "txn-out"); err != nil {
		t.Fatalf("create: %v", err)
	}
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
