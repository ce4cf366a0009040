package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestClusterSaramaIdempotentFailover: sarama's idempotent producer
// (Idempotent=true, which needs MaxOpenRequests=1; acks=all; many retries)
// writes numbered records while the partition leader crashes. sarama finds
// the new leader through Metadata (it ignores KIP-951 hints); every record
// it acknowledged is read back exactly once, in order.
func TestClusterSaramaIdempotentFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	c := startCluster(t, 3, nil)
	haltAllAtEnd(t, c)
	adm := observerClient(t, c.addrs())
	const topic = "sarama-failover"
	createReplicatedTopic(ctx, t, adm, topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	leader := c.leaderOf(ctx, topic, 0)

	producer, err := sarama.NewAsyncProducer(c.addrs(), saramaIdempotentConfig("skein-e2e-cluster-sarama"))
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	defer producer.Close()

	acks := newAckedRecords()
	const total, killAfter = 3000, 800
	// Collect outcomes; sarama reports each message on Successes or Errors.
	outcomes := make(chan struct{}, total)
	go func() {
		for m := range producer.Successes() {
			n := m.Metadata.(int)
			acks.ackSarama(n, m.Partition, nil)
			outcomes <- struct{}{}
		}
	}()
	go func() {
		for e := range producer.Errors() {
			acks.ackSarama(e.Msg.Metadata.(int), e.Msg.Partition, e.Err)
			outcomes <- struct{}{}
		}
	}()
	killed := acks.ackedAt(killAfter)
	inFlight := 0
	for n := 0; n < total; n++ {
		// At most streamWindow unanswered, so the crash hits records in
		// flight; the crash itself happens between sends.
		for inFlight >= streamWindow {
			awaitOutcome(ctx, t, outcomes)
			inFlight--
		}
		select {
		case <-killed:
			c.kill(int(leader) - 1)
			t.Logf("killed leader %d after %d sends", leader, n)
			killed = nil
		default:
		}
		producer.Input() <- &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(strconv.Itoa(n)), Metadata: n}
		inFlight++
	}
	for ; inFlight > 0; inFlight-- {
		awaitOutcome(ctx, t, outcomes)
	}
	if killed != nil {
		t.Fatalf("the leader was never killed: %d acknowledged before the end", killAfter)
	}
	_, n, errs := acks.snapshot()
	t.Logf("%d of %d acknowledged, %d failed: %v", n, total, acks.failures(), errs)
	if n == 0 {
		t.Fatalf("nothing acknowledged")
	}
	checkAckedRecords(ctx, t, c.addrs(), topic, acks)
}

// saramaIdempotentConfig is sarama's idempotent producer (Idempotent=true,
// which needs MaxOpenRequests=1; acks=all; many quick retries) with
// records routed by their Partition field, reporting every outcome.
func saramaIdempotentConfig(clientID string) *sarama.Config {
	cfg := saramaConfig()
	cfg.ClientID = clientID
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Retry.Max = 100
	cfg.Producer.Retry.Backoff = 50 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	return cfg
}

// awaitOutcome waits for one produce outcome from sarama.
func awaitOutcome(ctx context.Context, t testing.TB, outcomes <-chan struct{}) {
	t.Helper()
	select {
	case <-outcomes:
	case <-ctx.Done():
		t.Fatalf("sarama did not report a produce outcome: %v", ctx.Err())
	}
}

// TestClusterSaramaReassignment: sarama's ClusterAdmin moves a partition
// (AlterPartitionReassignments v0, sent to the broker Metadata names as
// controller, which forwards it) and lists it (ListPartitionReassignments);
// the move completes.
func TestClusterSaramaReassignment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	c := startCluster(t, 3, nil)
	adm := observerClient(t, c.addrs())
	const topic = "sarama-moved"
	createReplicatedTopic(ctx, t, adm, topic, 1, 1, nil)
	from := replicasOf(ctx, t, adm, topic, 0)
	target := otherBrokers(3, from...)

	sadm, err := sarama.NewClusterAdmin(c.addrs(), saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer sadm.Close()
	if err := sadm.AlterPartitionReassignments(topic, [][]int32{target}); err != nil {
		t.Fatalf("sarama AlterPartitionReassignments: %v", err)
	}
	awaitReplicas(ctx, t, adm, topic, 0, "the target", func(r []int32) bool { return slices.Equal(r, target) })
	// The broker asked may apply the completing record a moment later.
	awaitAdmin(ctx, t, "sarama listing no reassignment", func() (bool, any) {
		status, err := sadm.ListPartitionReassignments(topic, []int32{0})
		return err == nil && len(status[topic]) == 0, fmt.Sprintf("%+v (err %v)", status[topic], err)
	})
}
