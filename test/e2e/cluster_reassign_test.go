package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestClusterReassignment moves replicas with franz-go's kadm
// (AlterPartitionReassignments) on four brokers while an idempotent
// acks=all producer writes: partition 0 moves off its leader onto broker 4,
// partition 1 grows from three replicas to four. Every acknowledged record
// is read back afterwards, the replicas are where they were sent, and the
// brokers that lost a replica no longer hold its log.
func TestClusterReassignment(t *testing.T) {
	c := startCluster(t, 4, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := observerClient(t, c.addrs())
	const topic = "moving"
	createReplicatedTopic(ctx, t, adm, topic, 2, 3, map[string]string{"min.insync.replicas": "2"})

	// The initial placement keeps broker 4 out of both partitions.
	for p := int32(0); p < 2; p++ {
		if r := replicasOf(ctx, t, adm, topic, p); slices.Contains(r, 4) {
			target := []int32{1, 2, 3}
			var req kadm.AlterPartitionAssignmentsReq
			req.Assign(topic, p, target)
			mustReassign(ctx, t, adm, req)
			awaitReplicas(ctx, t, adm, topic, p, fmt.Sprint(target), func(r []int32) bool { return slices.Equal(r, target) })
		}
	}

	producer := idempotentProducer(t, c.addrs())
	acks := newAckedRecords()
	st := startStream(ctx, producer, topic, spreadOver(2), 0, openEnded, acks)
	awaitProgress(ctx, t, acks, 200)

	r0 := replicasOf(ctx, t, adm, topic, 0)
	v0, err := describePartition(ctx, adm, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Partition 0: replace its leader with broker 4, keep the other two.
	moved0 := append([]int32{4}, slices.DeleteFunc(slices.Clone(r0), func(r int32) bool { return r == v0.Leader })...)
	// Partition 1: every broker (replication factor 3 -> 4).
	grown1 := []int32{1, 2, 3, 4}
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, moved0)
	req.Assign(topic, 1, grown1)
	mustReassign(ctx, t, adm, req)

	awaitReplicas(ctx, t, adm, topic, 0, fmt.Sprint(moved0), func(r []int32) bool { return slices.Equal(r, moved0) })
	awaitReplicas(ctx, t, adm, topic, 1, fmt.Sprint(grown1), func(r []int32) bool { return slices.Equal(r, grown1) })
	awaitPartition(ctx, t, adm, topic, 0, "a leader in the target", func(v partitionView) bool {
		return v.Leader != v0.Leader && slices.Contains(moved0, v.Leader) && len(v.ISR) == 3
	})
	awaitNoReassignments(ctx, t, adm, topic)
	awaitProgress(ctx, t, acks, 200) // writes go on after the move
	total := st.stopAndWait(t)
	if _, n, errs := acks.snapshot(); n != total {
		t.Fatalf("%d of %d acknowledged; errors %v", n, total, errs)
	}
	// Every acknowledged record is readable, once, in order.
	if got := checkAckedRecords(ctx, t, c.addrs(), topic, acks); got != total {
		t.Fatalf("read %d records, want %d", got, total)
	}

	// The removed leader deletes its log of partition 0 (the image no
	// longer lists it there).
	awaitLogDirs(ctx, t, adm, topic, 0, moved0)
}

// TestClusterReassignmentCancel: a reassignment onto a broker that is down
// stays pending, visible in ListPartitionReassignments and in Metadata's
// replica set (the union, as Kafka shows it); cancelling reverts it.
func TestClusterReassignmentCancel(t *testing.T) {
	c := startCluster(t, 4, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := observerClient(t, c.addrs())
	const topic = "stuck"
	createReplicatedTopic(ctx, t, adm, topic, 1, 2, nil)
	orig := replicasOf(ctx, t, adm, topic, 0)
	spare := otherBrokers(4, orig...)[0]
	c.kill(int(spare) - 1)

	target := []int32{orig[0], spare}
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, target)
	mustReassign(ctx, t, adm, req)

	// Brokers apply the metadata log each at its own pace: a broker other
	// than the one that forwarded the request may answer from an older
	// image for a moment.
	union := append(slices.Clone(target), orig[1])
	awaitAdmin(ctx, t, "the reassignment listed", func() (bool, any) {
		list, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
		got, ok := list[topic][0]
		if err == nil && ok && !(slices.Equal(got.AddingReplicas, []int32{spare}) && slices.Equal(got.RemovingReplicas, orig[1:]) && slices.Equal(got.Replicas, union)) {
			t.Fatalf("listed reassignment %+v, want replicas %v adding [%d] removing %v", got, union, spare, orig[1:])
		}
		return err == nil && ok, err
	})
	awaitReplicas(ctx, t, adm, topic, 0, "the union", func(r []int32) bool { return slices.Equal(r, union) })

	// Cancelling twice: the second finds nothing in progress.
	var cancelReq kadm.AlterPartitionAssignmentsReq
	cancelReq.CancelAssign(topic, 0)
	mustReassign(ctx, t, adm, cancelReq)
	res, err := adm.AlterPartitionAssignments(ctx, cancelReq)
	if err != nil {
		t.Fatal(err)
	}
	if r := res[topic][0]; !errors.Is(r.Err, kerr.NoReassignmentInProgress) {
		t.Fatalf("second cancel: %v, want NO_REASSIGNMENT_IN_PROGRESS", r.Err)
	}
	awaitReplicas(ctx, t, adm, topic, 0, "the original replicas", func(r []int32) bool { return sameSet(r, orig) })
	awaitNoReassignments(ctx, t, adm, topic)

	// Bad targets are refused per partition with Kafka's codes.
	var bad kadm.AlterPartitionAssignmentsReq
	bad.Assign(topic, 0, []int32{orig[0], 99})
	bad.Assign(topic, 7, []int32{orig[0]})
	res, err = adm.AlterPartitionAssignments(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	if r := res[topic][0]; !errors.Is(r.Err, kerr.InvalidReplicaAssignment) {
		t.Fatalf("unregistered broker: %v, want INVALID_REPLICA_ASSIGNMENT", r.Err)
	}
	if r := res[topic][7]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown partition: %v, want UNKNOWN_TOPIC_OR_PARTITION", r.Err)
	}
}

func mustReassign(ctx context.Context, t *testing.T, adm *kadm.Client, req kadm.AlterPartitionAssignmentsReq) {
	t.Helper()
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Error(); err != nil {
		t.Fatalf("AlterPartitionReassignments: %v", err)
	}
}

// awaitAdmin asks the cluster again until check reports done; last is
// what the test shows when ctx ends first. Brokers apply the metadata log
// each at its own pace, so an answer may lag a committed change a moment.
func awaitAdmin(ctx context.Context, t *testing.T, what string, check func() (done bool, last any)) {
	t.Helper()
	for {
		done, last := check()
		if done {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("never %s; last seen: %v", what, last)
		case <-time.After(externalPollInterval):
		}
	}
}

// awaitReplicas waits until the partition's replicas in Metadata satisfy
// cond.
func awaitReplicas(ctx context.Context, t *testing.T, adm *kadm.Client, topic string, p int32, what string, cond func([]int32) bool) {
	t.Helper()
	awaitAdmin(ctx, t, fmt.Sprintf("%s/%d replicas %s", topic, p, what), func() (bool, any) {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false, err
		}
		pd, ok := md.Topics[topic].Partitions[p]
		return ok && cond(pd.Replicas), pd.Replicas
	})
}

func awaitNoReassignments(ctx context.Context, t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	awaitAdmin(ctx, t, "no reassignment listed", func() (bool, any) {
		list, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}}})
		return err == nil && len(list) == 0, fmt.Sprintf("%+v (err %v)", list, err)
	})
}

// awaitLogDirs waits until exactly the brokers in want hold a log of the
// partition (DescribeLogDirs of every broker).
func awaitLogDirs(ctx context.Context, t *testing.T, adm *kadm.Client, topic string, p int32, want []int32) {
	t.Helper()
	awaitAdmin(ctx, t, fmt.Sprintf("%s/%d logs on %v only", topic, p, want), func() (bool, any) {
		dirs, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{topic: {p: {}}})
		if err != nil {
			return false, err
		}
		var holders []int32
		for broker, bd := range dirs {
			if _, ok := bd.LookupPartition(topic, p); ok {
				holders = append(holders, broker)
			}
		}
		return sameSet(holders, want), holders
	})
}

func sameSet(a, b []int32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestClusterReassignmentSurvivesControllerFailover: a reassignment is a
// metadata record, so one pending when the active controller dies (its
// added replica's broker is down) is carried on by the next controller and
// completes once that broker is back.
func TestClusterReassignmentSurvivesControllerFailover(t *testing.T) {
	c := startCluster(t, 5, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := observerClient(t, c.addrs())
	const topic = "carried"
	createReplicatedTopic(ctx, t, adm, topic, 1, 2, nil)
	orig := replicasOf(ctx, t, adm, topic, 0)
	ctrl := awaitActiveController(ctx, t, c, func(int32) bool { return true })
	spare := otherBrokers(5, append(slices.Clone(orig), ctrl)...)[0]
	c.kill(int(spare) - 1)

	target := []int32{orig[0], spare}
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, target)
	mustReassign(ctx, t, adm, req)
	awaitReplicas(ctx, t, adm, topic, 0, "the union", func(r []int32) bool { return len(r) == 3 })

	c.kill(int(ctrl) - 1)
	awaitActiveController(ctx, t, c, func(id int32) bool { return id != ctrl })
	c.start(int(spare) - 1)
	awaitReplicas(ctx, t, adm, topic, 0, fmt.Sprint(target), func(r []int32) bool { return slices.Equal(r, target) })
	awaitNoReassignments(ctx, t, adm, topic)
	c.start(int(ctrl) - 1)
	awaitPartition(ctx, t, adm, topic, 0, "both target replicas in sync", func(v partitionView) bool { return sameSet(v.ISR, target) })
}

// TestClusterReassignmentAwayFromADownBroker: a replica reassigned away
// while its broker is down is deleted when that broker is back and has
// caught up with metadata (not before: its stale replay still lists it),
// and nothing of it is left in its log directory.
func TestClusterReassignmentAwayFromADownBroker(t *testing.T) {
	c := startCluster(t, 4, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := observerClient(t, c.addrs())
	const topic = "left"
	createReplicatedTopic(ctx, t, adm, topic, 1, 2, nil)
	orig := replicasOf(ctx, t, adm, topic, 0)
	gone, spare := orig[1], otherBrokers(4, orig...)[0]
	// A new topic's ISR is its replicas from the start: wait for the logs.
	awaitLogDirs(ctx, t, adm, topic, 0, orig)
	c.kill(int(gone) - 1)
	awaitPartition(ctx, t, adm, topic, 0, "the down broker out of the ISR", func(v partitionView) bool { return !v.inISR(gone) })

	target := []int32{orig[0], spare}
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, target)
	mustReassign(ctx, t, adm, req)
	awaitReplicas(ctx, t, adm, topic, 0, fmt.Sprint(target), func(r []int32) bool { return slices.Equal(r, target) })

	dir := filepath.Join(c.props[gone-1]["log.dirs"], topic+"-0")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the down broker's log of the partition: %v", err)
	}
	c.start(int(gone) - 1)
	awaitLogDirs(ctx, t, adm, topic, 0, target)
	// The directory was never opened (the image does not list the
	// replica); it goes with the sweep of the registration's first
	// caught-up reconcile.
	awaitAdmin(ctx, t, "the down broker's directory of the partition deleted", func() (bool, any) {
		entries, err := os.ReadDir(c.props[gone-1]["log.dirs"])
		if err != nil {
			return false, err
		}
		var left []string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), topic+"-0") {
				left = append(left, e.Name())
			}
		}
		return len(left) == 0, left
	})
}
