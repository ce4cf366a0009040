package e2e

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestClusterFollowerLeavesAndRejoinsISR: a follower that stops fetching
// while records keep coming leaves the ISR (acks=all goes on with the
// others, min.insync.replicas=2); restarted, it truncates, catches up and
// rejoins. To show it really holds every acknowledged record, the other
// two replicas are then killed, so it is the only one left to lead, and
// everything is read back from it. Five brokers, so that the metadata
// quorum survives two dead nodes.
func TestClusterFollowerLeavesAndRejoinsISR(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	c := startCluster(t, 5, nil)
	haltAllAtEnd(t, c)
	adm := observerClient(t, c.addrs())
	const topic = "isr-rejoin"
	createReplicatedTopic(ctx, t, adm, topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	leader := c.leaderOf(ctx, topic, 0)
	followers := slices.DeleteFunc(replicasOf(ctx, t, adm, topic, 0), func(id int32) bool { return id == leader })
	laggard, other := followers[0], followers[1]

	producer := idempotentProducer(t, c.addrs())
	acks := newAckedRecords()
	st := startStream(ctx, producer, topic, onlyTo(0), 0, openEnded, acks)

	awaitProgress(ctx, t, acks, 500)
	c.kill(int(laggard) - 1)
	awaitPartition(ctx, t, adm, topic, 0, "the stopped follower out of the ISR", func(v partitionView) bool {
		return !v.inISR(laggard) && len(v.ISR) == 2
	})
	// Records acknowledged now are on the leader and the other follower
	// only: the laggard must fetch them when it returns.
	_, outAt, _ := acks.snapshot()
	awaitProgress(ctx, t, acks, 1000)
	c.start(int(laggard) - 1)
	c.waitRegistered()
	awaitPartition(ctx, t, adm, topic, 0, "the follower back in the ISR", func(v partitionView) bool {
		return v.inISR(laggard) && len(v.ISR) == 3
	})
	t.Logf("broker %d left the ISR after %d acknowledged records and rejoined", laggard, outAt)
	awaitProgress(ctx, t, acks, 500)
	total := st.stopAndWait(t)
	if _, n, errs := acks.snapshot(); n != total {
		t.Fatalf("%d of %d acknowledged; errors %v", n, total, errs)
	}

	c.kill(int(other) - 1)
	awaitPartition(ctx, t, adm, topic, 0, "ISR without the killed follower", func(v partitionView) bool { return !v.inISR(other) })
	c.kill(int(leader) - 1)
	awaitPartition(ctx, t, adm, topic, 0, "the rejoined follower leading", func(v partitionView) bool { return v.Leader == laggard })
	if got := checkAckedRecords(ctx, t, c.addrs(), topic, acks); got != total {
		t.Fatalf("read %d records from broker %d, want %d", got, laggard, total)
	}
}
