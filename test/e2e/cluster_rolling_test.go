package e2e

import (
	"context"
	"testing"
	"time"
)

// TestClusterRollingRestart: every broker in turn is stopped cleanly (a
// controlled shutdown moves its leaderships first, as on SIGTERM) and
// started again, while an idempotent acks=all producer keeps writing with
// min.insync.replicas=2. As an operator would, each restart waits for the
// ISRs to be full again before the next. No produce error reaches the
// application and nothing is duplicated or lost.
func TestClusterRollingRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	c := startCluster(t, 3, nil)
	haltAllAtEnd(t, c)
	adm := observerClient(t, c.addrs())
	const topic, partitions = "rolling", 3
	createReplicatedTopic(ctx, t, adm, topic, partitions, 3, map[string]string{"min.insync.replicas": "2"})

	producer := idempotentProducer(t, c.addrs())
	acks := newAckedRecords()
	st := startStream(ctx, producer, topic, spreadOver(partitions), 0, openEnded, acks)
	for i := range c.brokers {
		awaitProgress(ctx, t, acks, 500)
		c.stop(i)
		c.start(i)
		c.waitRegistered()
		for p := range int32(partitions) {
			awaitPartition(ctx, t, adm, topic, p, "a full ISR after the restart", func(v partitionView) bool {
				return v.Leader >= 0 && len(v.ISR) == 3
			})
		}
		t.Logf("broker %d restarted", i+1)
	}
	awaitProgress(ctx, t, acks, 500)
	total := st.stopAndWait(t)
	_, n, errs := acks.snapshot()
	if n != total || acks.failures() != 0 {
		t.Fatalf("%d of %d acknowledged, %d failed: %v", n, total, acks.failures(), errs)
	}
	if got := checkAckedRecords(ctx, t, c.addrs(), topic, acks); got != total {
		t.Fatalf("read %d records, want %d", got, total)
	}
}
