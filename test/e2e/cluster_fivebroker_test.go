package e2e

import (
	"context"
	"testing"
	"time"
)

// TestClusterFiveBrokersTwoCrashes: five brokers, an RF=3 topic with six
// partitions, an idempotent acks=all producer spreading numbered records
// over them; two brokers crash one after the other mid-stream (the second
// while partitions are still moving away from the first). Every
// acknowledged record is read back exactly once, in order per partition.
// min.insync.replicas stays 1: with RF=3 on five brokers some partition
// has both dead brokers among its replicas, and min.insync.replicas=2
// would (rightly) stop it taking acks=all writes.
func TestClusterFiveBrokersTwoCrashes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	c := startCluster(t, 5, nil)
	haltAllAtEnd(t, c)
	adm := observerClient(t, c.addrs())
	const topic, partitions = "five-brokers", 6
	createReplicatedTopic(ctx, t, adm, topic, partitions, 3, nil)

	producer := idempotentProducer(t, c.addrs())
	acks := newAckedRecords()
	st := startStream(ctx, producer, topic, spreadOver(partitions), 0, openEnded, acks)

	first := c.leaderOf(ctx, topic, 0)
	awaitProgress(ctx, t, acks, 1500)
	c.kill(int(first) - 1)
	second := int32(-1)
	for p := range int32(partitions) {
		v, err := describePartition(ctx, adm, topic, p)
		if err == nil && v.Leader >= 0 && v.Leader != first {
			second = v.Leader
			break
		}
	}
	if second < 0 {
		t.Fatalf("no partition led by a live broker")
	}
	awaitProgress(ctx, t, acks, 1500)
	c.kill(int(second) - 1)
	t.Logf("killed broker %d, then broker %d", first, second)
	awaitProgress(ctx, t, acks, 1500)
	total := st.stopAndWait(t)
	_, n, errs := acks.snapshot()
	if n != total {
		t.Fatalf("%d of %d acknowledged; errors %v", n, total, errs)
	}
	if got := checkAckedRecords(ctx, t, c.addrs(), topic, acks); got != total {
		t.Fatalf("read %d records, want %d", got, total)
	}
}
