package e2e

import (
	"context"
	"testing"
	"time"
)

// TestClusterControllerFailover: the active controller crashes; another
// node takes over, re-elects leaders for the partitions the dead one led,
// serves admin requests, takes the old controller back, and a later
// partition-leader crash is still handled: producing resumes and every
// acknowledged record is read back exactly once, in order.
func TestClusterControllerFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	c := startCluster(t, 3, nil)
	haltAllAtEnd(t, c)
	adm := observerClient(t, c.addrs())
	const topic, partitions = "controller-failover", 3
	createReplicatedTopic(ctx, t, adm, topic, partitions, 3, map[string]string{"min.insync.replicas": "2"})

	oldController := awaitActiveController(ctx, t, c, func(int32) bool { return true })
	c.kill(int(oldController) - 1)
	newController := awaitActiveController(ctx, t, c, func(id int32) bool { return id != oldController })
	t.Logf("controller %d killed; %d took over", oldController, newController)
	for p := range int32(partitions) {
		awaitPartition(ctx, t, adm, topic, p, "a live leader and no dead ISR member", func(v partitionView) bool {
			return v.Leader >= 0 && v.Leader != oldController && !v.inISR(oldController)
		})
	}

	// Admin requests reach the new controller (they are forwarded to it).
	createReplicatedTopic(ctx, t, adm, "created-by-new-controller", 1, 2, nil)

	// The old controller comes back as an ordinary node and catches up.
	c.start(int(oldController) - 1)
	c.waitRegistered()
	for p := range int32(partitions) {
		awaitPartition(ctx, t, adm, topic, p, "a full ISR again", func(v partitionView) bool { return len(v.ISR) == 3 })
	}

	// A partition led by a node that is not the controller, so the next
	// crash is a plain leader failure that the new controller must handle.
	victimPartition, victim := int32(-1), int32(-1)
	for p := range int32(partitions) {
		v, err := describePartition(ctx, adm, topic, p)
		if err == nil && v.Leader != newController {
			victimPartition, victim = p, v.Leader
			break
		}
	}
	if victim < 0 {
		t.Fatalf("controller %d leads every partition of %s", newController, topic)
	}

	producer := idempotentProducer(t, c.addrs())
	acks := newAckedRecords()
	st := startStream(ctx, producer, topic, onlyTo(victimPartition), 0, openEnded, acks)
	awaitProgress(ctx, t, acks, 500)
	c.kill(int(victim) - 1)
	t.Logf("killed broker %d, leader of partition %d", victim, victimPartition)
	awaitProgress(ctx, t, acks, 500)
	total := st.stopAndWait(t)
	after := awaitPartition(ctx, t, adm, topic, victimPartition, "a new leader", func(v partitionView) bool {
		return v.Leader >= 0 && v.Leader != victim
	})
	_, n, errs := acks.snapshot()
	if n != total {
		t.Fatalf("%d of %d records acknowledged; errors %v", n, total, errs)
	}
	t.Logf("partition %d now led by %d (%v); %d acknowledged", victimPartition, after.Leader, after, n)
	if got := checkAckedRecords(ctx, t, c.addrs(), topic, acks); got != total {
		t.Fatalf("read %d records, want %d", got, total)
	}
}
