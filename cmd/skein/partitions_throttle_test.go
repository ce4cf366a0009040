package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/reassignplan"
	"github.com/skein-log/skein/internal/testcluster"
)

// throttleTestRate is the brokers' static leader/follower rate in the
// throttle test: 1 MiB/s.
const throttleTestRate = 1 << 20

// throttleTestBytes is what each moved partition holds: enough that a
// throttled copy takes seconds.
const throttleTestBytes = 4 << 20

// TestPartitionsReassignThrottle (issue 15): adding a replica to a
// partition of 4 MiB copies unthrottled without --throttle; with
// --throttle the copy cannot beat 1 MiB/s, whether the leader's rate
// (brokers 1 and 2) or the follower's (brokers 3 and 4) is the one set:
// the new replica joins (the reassignment completes) no sooner than a
// loose lower bound derived from the rate. --execute --throttle sets the
// partition's throttled-replicas lists and names the brokers whose static
// rates differ; the --verify that sees the move completed removes the
// lists. Only the lower bound is asserted; the measured rates are logged.
func TestPartitionsReassignThrottle(t *testing.T) {
	rate := strconv.Itoa(throttleTestRate)
	props := testcluster.Props(t, testcluster.Combine(4), map[string]string{"offsets.topic.num.partitions": "1"})
	props[0]["leader.replication.throttled.rate"] = rate
	props[1]["leader.replication.throttled.rate"] = rate
	props[2]["follower.replication.throttled.rate"] = rate
	props[3]["follower.replication.throttled.rate"] = rate
	addr := startClusterOf(t, props)[0].Addr("PLAINTEXT")

	unthrottled := moveAndTime(t, addr, "fast", 1, 2, false)
	byLeader := moveAndTime(t, addr, "by-leader", 1, 2, true)
	byFollower := moveAndTime(t, addr, "by-follower", 3, 4, true)
	mib := func(d time.Duration) float64 { return float64(throttleTestBytes) / (1 << 20) / d.Seconds() }
	// The bucket lets one second's worth through at once; the rate past
	// it is the steady one.
	steady := func(d time.Duration) float64 {
		return float64(throttleTestBytes-throttleTestRate) / (1 << 20) / d.Seconds()
	}
	t.Logf("catch-up of %d MiB: unthrottled %v (%.1f MiB/s); leader throttled at 1 MiB/s %v (%.2f MiB/s, %.2f past the 1 MiB burst); follower throttled %v (%.2f MiB/s, %.2f past the burst)",
		throttleTestBytes>>20, unthrottled, mib(unthrottled), byLeader, mib(byLeader), steady(byLeader), byFollower, mib(byFollower), steady(byFollower))

	// The copy may run one second's burst and one batch ahead of the
	// rate; half of the rest at the rate is a bound no scheduling breaks.
	floor := time.Duration(float64(throttleTestBytes-2<<20) / throttleTestRate * 0.5 * float64(time.Second))
	for name, took := range map[string]time.Duration{"leader": byLeader, "follower": byFollower} {
		if took < floor {
			t.Errorf("%s-throttled copy of %d bytes took %v, faster than the floor %v a 1 MiB/s throttle allows", name, throttleTestBytes, took, floor)
		}
	}
}

// moveAndTime creates topic with one replica on leader, fills it with
// throttleTestBytes, adds a replica on follower with skein partitions
// reassign (--throttle at the test rate when throttle is set) and returns
// how long from --execute until --verify saw the move completed.
func moveAndTime(t *testing.T, addr, topic string, leader, follower int32, throttle bool) time.Duration {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(256<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
	as := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	as.Partition, as.Replicas = 0, []int32{leader}
	ct.ReplicaAssignment = append(ct.ReplicaAssignment, as)
	create.Topics = append(create.Topics, ct)
	create.TimeoutMillis = 10_000
	resp, err := create.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create %s on broker %d: %v", topic, leader, err)
	}
	// Not compressed: the bytes copied are the bytes produced.
	value := make([]byte, 32<<10)
	var records []*kgo.Record
	for range throttleTestBytes / len(value) {
		records = append(records, &kgo.Record{Value: value})
	}
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	file := filepath.Join(t.TempDir(), "plan.json")
	plan := reassignplan.Format([]reassignplan.Assignment{{Topic: topic, Partition: 0, Replicas: []int32{leader, follower}}})
	if err := os.WriteFile(file, plan, 0o644); err != nil {
		t.Fatal(err)
	}

	args := []string{"reassign", "--execute", "--plan", file, "-b", addr}
	if throttle {
		args = append(args, "--throttle", strconv.Itoa(throttleTestRate))
	}
	start := time.Now()
	out := mustRun(t, runPartitions, "", args...)
	if !strings.Contains(out, "Successfully started partition reassignments for "+topic+"-0") {
		t.Fatalf("execute:\n%s", out)
	}
	if throttle {
		// Each pair of brokers has only one of the two rates set.
		if !strings.Contains(out, "The inter-broker throttle limit is") || !strings.Contains(out, fmt.Sprintf("Warning: broker %d has ", follower)) {
			t.Fatalf("execute --throttle:\n%s", out)
		}
		want := map[string]string{
			"leader.replication.throttled.replicas":   fmt.Sprintf("0:%d", leader),
			"follower.replication.throttled.replicas": fmt.Sprintf("0:%d", follower),
		}
		waitThrottleLists(t, ctx, adm, topic, want, "--execute")
	}
	for {
		out = mustRun(t, runPartitions, "", "reassign", "--verify", "--plan", file, "-b", addr)
		if strings.Contains(out, "is completed.") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("never completed:\n%s", out)
		case <-time.After(50 * time.Millisecond):
		}
	}
	took := time.Since(start)
	if !strings.Contains(out, "Throttle was removed.") {
		t.Fatalf("verify of a completed move did not remove the throttle:\n%s", out)
	}
	waitThrottleLists(t, ctx, adm, topic, map[string]string{}, "--verify")
	return took
}

// waitThrottleLists waits until the topic's non-empty throttled-replicas
// lists are want, as the broker answering DescribeConfigs sees them: it
// applies the controller's records a little after the change returned.
func waitThrottleLists(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, want map[string]string, after string) {
	t.Helper()
	for {
		got := throttleLists(t, ctx, adm, topic)
		if maps.Equal(got, want) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("throttled replicas after %s: %v, want %v", after, got, want)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// throttleLists is the topic's non-empty throttled-replicas lists.
func throttleLists(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) map[string]string {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range rc.Configs {
		if strings.HasSuffix(c.Key, ".replication.throttled.replicas") && c.MaybeValue() != "" {
			got[c.Key] = c.MaybeValue()
		}
	}
	return got
}
