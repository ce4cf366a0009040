package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/rpc"
)

// KIP-890 part 1 on a 3-broker cluster: a partition leader appends a
// producer's first transactional batch only once the producer's
// transaction coordinator (another broker, as a rule) confirms that the
// partition is in the ongoing transaction. The producer is driven with
// kmsg; each Produce goes over its own TCP connection to the partition's
// leader.
func TestTxnProduceVerifiedWithCoordinator(t *testing.T) {
	requirePartitionSide(t)
	c := startCluster(t, 3, map[string]string{"transaction.state.log.num.partitions": "3"})
	ctx := testContext(t, 60*time.Second)
	createReplicatedTopic(ctx, t, kadm.NewClient(c.client()), "tv", 3, 3, nil)
	cl := c.client()
	useTransactionVersion1(ctx, t, cl, 1, 2, 3) // KIP-890 part 1's verification, EndTxn keeping the epoch

	p := initTxnProducer(ctx, t, cl, "tv-id", 60_000, -1, -1)
	if p.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %+v", p)
	}
	pid, epoch := p.ProducerID, p.ProducerEpoch
	produce := func(part int32, epoch int16, seq int32, v string) int16 {
		t.Helper()
		leader := c.leaderOf(ctx, "tv", part)
		conn, err := rpc.Dial(ctx, c.addrs()[leader-1], "e2e-txn-verify")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks, req.TimeoutMillis, req.TransactionID = -1, 30_000, kmsg.StringPtr("tv-id")
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "tv"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = part, batch.BuildTransactional([][]byte{[]byte(v)}, time.Now().UnixMilli(), pid, epoch, seq)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := conn.Request(ctx, req)
		if err != nil {
			t.Fatalf("produce to tv-%d: %v", part, err)
		}
		return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}

	if codes := addTxnPartitions(ctx, t, cl, "tv-id", pid, epoch, "tv", 0); codes[0] != 0 {
		t.Fatalf("add tv-0: %v", codes)
	}
	// tv-1 was never added: its leader asks the coordinator and refuses.
	if code := produce(1, epoch, 0, "stray"); code != kerr.InvalidTxnState.Code {
		t.Fatalf("batch to tv-1, not in the transaction: code %d, want INVALID_TXN_STATE", code)
	}
	if code := produce(0, epoch, 0, "a"); code != 0 {
		t.Fatalf("batch to tv-0, in the transaction: code %d", code)
	}
	// Open on tv-0 now: the next batch needs no verification.
	if code := produce(0, epoch, 1, "b"); code != 0 {
		t.Fatalf("second batch to tv-0: code %d", code)
	}
	if code := produce(1, epoch, 0, "stray"); code != kerr.InvalidTxnState.Code {
		t.Fatalf("batch to tv-1 again: code %d, want INVALID_TXN_STATE", code)
	}
	if code := endTxn(ctx, t, cl, "tv-id", pid, epoch, true); code != 0 {
		t.Fatalf("EndTxn: code %d", code)
	}
	// Once the commit is complete (its markers written), a late batch of
	// the ended transaction would open a transaction no coordinator ends:
	// a hanging transaction. Refused.
	awaitTxnState(ctx, t, cl, "tv-id", func(st kmsg.DescribeTransactionsResponseTransactionState) bool {
		return st.State == "CompleteCommit"
	})
	if code := produce(0, epoch, 2, "late"); code != kerr.InvalidTxnState.Code {
		t.Fatalf("late batch to tv-0 after the commit: code %d, want INVALID_TXN_STATE", code)
	}
	// A newer InitProducerId fences the epoch; the coordinator's
	// PRODUCER_FENCED reaches the producer as INVALID_PRODUCER_EPOCH.
	p2 := initTxnProducer(ctx, t, cl, "tv-id", 60_000, -1, -1)
	if p2.ErrorCode != 0 || p2.ProducerEpoch != epoch+1 {
		t.Fatalf("second InitProducerId: %+v", p2)
	}
	if code := produce(2, epoch, 0, "zombie"); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("fenced producer's batch to tv-2: code %d, want INVALID_PRODUCER_EPOCH", code)
	}
	// TxnOffsetCommit is verified too: the group's __consumer_offsets
	// partition was never added (no AddOffsetsToTxn, no transaction).
	for {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tv-id", "tv-g", pid, p2.ProducerEpoch
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "tv"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset = 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("TxnOffsetCommit: %v", err)
		}
		err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
		if errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.NotCoordinator) {
			select { // the group coordinator is still starting
			case <-ctx.Done():
				t.Fatalf("TxnOffsetCommit: still %v", err)
			case <-time.After(externalPollInterval):
			}
			continue
		}
		// INVALID_TXN_STATE before v4; from v4 (which adds it) Kafka
		// answers TRANSACTION_ABORTABLE.
		want := kerr.InvalidTxnState
		if resp.Version >= 4 {
			want = kerr.TransactionAbortable
		}
		if !errors.Is(err, want) {
			t.Fatalf("TxnOffsetCommit v%d outside a transaction: %v, want %v", resp.Version, err, want)
		}
		break
	}

	// Only the committed records are there, and nothing hangs: the last
	// stable offset of every partition is its high watermark.
	adm := kadm.NewClient(cl)
	committed, err := adm.ListCommittedOffsets(ctx, "tv")
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "tv")
	if err != nil {
		t.Fatal(err)
	}
	for part, want := range map[int32]int64{0: 3, 1: 0, 2: 0} { // two records and the COMMIT marker on tv-0
		got, _ := committed.Lookup("tv", part)
		end, _ := ends.Lookup("tv", part)
		if got.Err != nil || end.Err != nil || got.Offset != want || end.Offset != want {
			t.Fatalf("tv-%d: last stable offset %d (%v), high watermark %d (%v), want both %d", part, got.Offset, got.Err, end.Offset, end.Err, want)
		}
	}
}

// With transaction.partition.verification.enable=false the leader takes
// the batch to a partition never added, and its transaction hangs there:
// the last stable offset stays behind the high watermark. (What the
// verification prevents, so the test above can fail.)
func TestTxnProduceUnverifiedHangs(t *testing.T) {
	requirePartitionSide(t)
	c := startCluster(t, 1, map[string]string{"transaction.partition.verification.enable": "false"})
	ctx := testContext(t, 30*time.Second)
	createReplicatedTopic(ctx, t, kadm.NewClient(c.client()), "tu", 1, 1, nil)
	cl := c.client()
	p := initTxnProducer(ctx, t, cl, "tu-id", 60_000, -1, -1)
	if p.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %+v", p)
	}
	conn, err := rpc.Dial(ctx, c.addrs()[0], "e2e-txn-unverified")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 30_000, kmsg.StringPtr("tu-id")
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "tu"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch.BuildTransactional([][]byte{[]byte("stray")}, time.Now().UnixMilli(), p.ProducerID, p.ProducerEpoch, 0)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := conn.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("unverified batch: code %d, want it taken", code)
	}
	adm := kadm.NewClient(cl)
	lso, err := adm.ListCommittedOffsets(context.Background(), "tu")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := lso.Lookup("tu", 0); o.Offset != 0 {
		t.Fatalf("last stable offset %d, want 0 (the stray transaction hangs)", o.Offset)
	}
}
