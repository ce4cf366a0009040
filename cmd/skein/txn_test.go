package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTxnListAndDescribe: `skein txn list` and `describe` show an open
// transaction as kafka-transactions does.
func TestTxnListAndDescribe(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, runTopic, "", "create", "payments", "--partitions", "2", "-b", addr)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr("cli-tx"), 60_000
	ip, err := init.RequestWith(ctx, cl)
	if err != nil || ip.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %+v", err, ip)
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "cli-tx", ip.ProducerID, ip.ProducerEpoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "payments", []int32{1, 0}
	add.Topics = append(add.Topics, at)
	if resp, err := add.RequestWith(ctx, cl); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AddPartitionsToTxn: %v %+v", err, resp)
	}
	pid := strconv.FormatInt(ip.ProducerID, 10)

	out := mustRun(t, runTxn, "", "list", "-b", addr)
	if row := tableRow(t, out, "cli-tx"); strings.Join(row, " ") != "cli-tx 1 "+pid+" Ongoing" {
		t.Errorf("list row %q:\n%s", row, out)
	}
	out = mustRun(t, runTxn, "", "list", "--state", "CompleteCommit", "-b", addr)
	if strings.Contains(out, "cli-tx") {
		t.Errorf("listed in a state it is not in:\n%s", out)
	}
	out = mustRun(t, runTxn, "", "describe", "--transactional-id", "cli-tx", "-b", addr)
	row := tableRow(t, out, "1", "cli-tx")
	if len(row) != 9 || row[2] != pid || row[3] != "0" || row[4] != "Ongoing" || row[5] != "60000" || row[8] != "payments-0,payments-1" {
		t.Errorf("describe row %q:\n%s", row, out)
	}
	if r := runCLI(t, runTxn, "", "describe", "nosuch", "-b", addr); r.err == nil || !strings.Contains(r.stdout, "TRANSACTIONAL_ID_NOT_FOUND") {
		t.Errorf("describe of an unknown id: %v\n%s", r.err, r.stdout)
	}
	for _, args := range [][]string{
		{"abort", "--topic", "payments", "-b", addr},
		{"abort", "--topic", "payments", "--partition", "0", "--start-offset", "3", "--producer-id", "1", "-b", addr},
		{"abort", "--topic", "payments", "--partition", "0", "--producer-id", "1", "-b", addr},
		{"find-hanging", "-b", addr},
	} {
		if r := runCLI(t, runTxn, "", args...); r.err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}

// TestHangingTransactions: an open transaction older than the maximum
// timeout hangs unless its coordinator has it ongoing with the partition.
func TestHangingTransactions(t *testing.T) {
	now := time.UnixMilli(10_000_000)
	old := now.Add(-20 * time.Minute).UnixMilli()
	described := kadm.DescribedProducersTopics{"t": {Topic: "t", Partitions: kadm.DescribedProducersPartitions{
		0: {Topic: "t", Partition: 0, ActiveProducers: kadm.DescribedProducers{
			1: {Topic: "t", Partition: 0, ProducerID: 1, ProducerEpoch: 3, CurrentTxnStartOffset: 40, LastTimestamp: old},
			2: {Topic: "t", Partition: 0, ProducerID: 2, ProducerEpoch: 0, CurrentTxnStartOffset: -1, LastTimestamp: old},
			3: {Topic: "t", Partition: 0, ProducerID: 3, ProducerEpoch: 0, CurrentTxnStartOffset: 7, LastTimestamp: now.UnixMilli()},
			4: {Topic: "t", Partition: 0, ProducerID: 4, ProducerEpoch: 1, CurrentTxnStartOffset: 9, LastTimestamp: old},
		}},
	}}}
	open := openTransactions(described, now, 15*time.Minute)
	if len(open) != 2 || open[0].ProducerID != 1 || open[1].ProducerID != 4 {
		t.Fatalf("open: %+v", open)
	}
	txns := kadm.DescribedTransactions{
		// Producer 1's id moved on to a new epoch: its transaction hangs.
		"a": {TxnID: "a", ProducerID: 1, ProducerEpoch: 4, State: "Ongoing", Topics: kadm.TopicsSet{"t": {0: {}}}},
		// Producer 4's transaction is still ongoing with t-0.
		"b": {TxnID: "b", ProducerID: 4, ProducerEpoch: 1, State: "Ongoing", Topics: kadm.TopicsSet{"t": {0: {}}}},
	}
	h := hanging(open, txns)
	if len(h) != 1 || h[0].ProducerID != 1 {
		t.Fatalf("hanging: %+v", h)
	}
}
