package e2e

import (
	"context"
	"testing"
	"time"
)

// TestClusterProcessLeaderSIGKILL: three real `skein server` processes;
// the partition leader gets SIGKILL in the middle of an idempotent
// acks=all stream (min.insync.replicas=2). Every acknowledged record is
// read back exactly once, in order; the killed process, restarted on its
// data, recovers its log, truncates what the new leader does not have,
// and rejoins the ISR.
func TestClusterProcessLeaderSIGKILL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pc := startProcessCluster(t, 3, nil)
	adm := observerClient(t, pc.addrs)
	const topic = "process-sigkill"
	createReplicatedTopic(ctx, t, adm, topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	leader := awaitPartition(ctx, t, adm, topic, 0, "a leader", func(v partitionView) bool { return v.Leader > 0 }).Leader

	producer := idempotentProducer(t, pc.addrs)
	acks := newAckedRecords()
	st := startStream(ctx, producer, topic, onlyTo(0), 0, openEnded, acks)
	awaitProgress(ctx, t, acks, 1000)
	pc.kill(int(leader) - 1)
	t.Logf("SIGKILL to leader %d", leader)
	awaitProgress(ctx, t, acks, 1000)
	total := st.stopAndWait(t)
	_, n, errs := acks.snapshot()
	if n != total {
		t.Fatalf("%d of %d acknowledged; errors %v", n, total, errs)
	}
	if got := checkAckedRecords(ctx, t, pc.addrs, topic, acks); got != total {
		t.Fatalf("read %d records, want %d", got, total)
	}

	pc.start(int(leader) - 1)
	awaitPartition(ctx, t, adm, topic, 0, "the restarted node back in the ISR", func(v partitionView) bool {
		return v.inISR(leader) && len(v.ISR) == 3
	})
}

// TestClusterProcessPausedFollowerLagsOutOfISR: a follower process gets
// SIGSTOP. Its sockets stay open and its session has not expired (the
// session timeout is set far above the lag limit), so only the leader's
// lag check can notice: after replica.lag.time.max.ms it leaves the ISR and
// acks=all writes (min.insync.replicas=2) go on without it. On SIGCONT it
// fetches what it missed and rejoins. Nothing acknowledged is lost.
func TestClusterProcessPausedFollowerLagsOutOfISR(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pc := startProcessCluster(t, 3, map[string]string{
		"replica.lag.time.max.ms":   "1000",
		"broker.session.timeout.ms": "30000",
	})
	adm := observerClient(t, pc.addrs)
	const topic = "process-lag"
	createReplicatedTopic(ctx, t, adm, topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	leader := awaitPartition(ctx, t, adm, topic, 0, "a leader", func(v partitionView) bool { return v.Leader > 0 }).Leader
	laggard := otherBrokers(3, leader)[0]

	producer := idempotentProducer(t, pc.addrs)
	acks := newAckedRecords()
	st := startStream(ctx, producer, topic, onlyTo(0), 0, openEnded, acks)
	awaitProgress(ctx, t, acks, 500)
	pc.pause(int(laggard) - 1)
	// Watch through the brokers that still answer: a metadata request to
	// the paused one would wait out its timeout every time.
	var live []string
	for i, a := range pc.addrs {
		if int32(i+1) != laggard {
			live = append(live, a)
		}
	}
	liveAdm := observerClient(t, live)
	// Well before the session could expire: only the lag check can have
	// removed it.
	lagCtx, lagCancel := context.WithTimeout(ctx, 15*time.Second)
	awaitPartition(lagCtx, t, liveAdm, topic, 0, "the paused follower out of the ISR", func(v partitionView) bool {
		return !v.inISR(laggard)
	})
	lagCancel()
	awaitProgress(ctx, t, acks, 1000)
	pc.resume(int(laggard) - 1)
	awaitPartition(ctx, t, adm, topic, 0, "the follower back in the ISR", func(v partitionView) bool {
		return v.inISR(laggard) && len(v.ISR) == 3
	})
	awaitProgress(ctx, t, acks, 500)
	total := st.stopAndWait(t)
	_, n, errs := acks.snapshot()
	if n != total {
		t.Fatalf("%d of %d acknowledged; errors %v", n, total, errs)
	}
	if got := checkAckedRecords(ctx, t, pc.addrs, topic, acks); got != total {
		t.Fatalf("read %d records, want %d", got, total)
	}
}
