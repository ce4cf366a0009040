package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/reassignplan"
	"github.com/skein-log/skein/internal/testcluster"
)

// staticFollowerRate is broker 3's follower.replication.throttled.rate in
// server.properties in TestPartitionsReassignThrottle: the dynamic rate
// --throttle sets wins over it, and it applies again once --verify
// removed the throttle.
const staticFollowerRate = 123456

// TestPartitionsReassignThrottle (issue 15), as kafka-reassign-partitions
// --throttle: --execute sets leader/follower.replication.throttled.rate
// as dynamic configs of the brokers a copy runs between (DescribeConfigs
// shows DYNAMIC_BROKER_CONFIG, and their throttles run at it at once: the
// configured limiter, read from skein_replication_throttle_rate_bytes) and
// the partition's throttled-replicas lists; the --verify that sees the
// move completed deletes the rates on every broker (broker 3 falls back to
// its static rate) and the lists. How fast a throttled copy runs is
// measured by BenchmarkReassignThrottledCatchUp, not asserted here.
func TestPartitionsReassignThrottle(t *testing.T) {
	props := testcluster.Props(t, testcluster.Combine(3), map[string]string{"offsets.topic.num.partitions": "1"})
	props[2]["follower.replication.throttled.rate"] = strconv.Itoa(staticFollowerRate)
	brokers := startClusterOf(t, props)
	addr := brokers[0].Addr("PLAINTEXT")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const rate = 8 << 20
	adm, file := fillAndPlan(t, ctx, addr, "moving", 1, 3, 1<<20)

	out := mustRun(t, runPartitions, "", "reassign", "--execute", "--plan", file, "-b", addr, "--throttle", strconv.Itoa(rate))
	if !strings.Contains(out, "Successfully started partition reassignments for moving-0") ||
		!strings.Contains(out, fmt.Sprintf("The inter-broker throttle limit was set to %d B/s", rate)) {
		t.Fatalf("execute --throttle:\n%s", out)
	}
	for _, b := range []int32{1, 3} {
		for _, key := range []string{leaderThrottledRate, followerThrottledRate} {
			requireRate(t, ctx, adm, b, key, strconv.Itoa(rate), kmsg.ConfigSourceDynamicBrokerConfig)
		}
	}
	requireRate(t, ctx, adm, 2, leaderThrottledRate, "9223372036854775807", kmsg.ConfigSourceDefaultConfig)
	awaitLimiter(t, ctx, brokers[0], "leader", rate)
	awaitLimiter(t, ctx, brokers[2], "follower", rate)
	waitThrottleLists(t, ctx, adm, "moving", map[string]string{leaderThrottledReplicas: "0:1", followerThrottledReplicas: "0:3"}, "--execute")

	out = verifyUntilCompleted(t, ctx, file, addr)
	if !strings.Contains(out, "Clearing broker-level throttles on brokers 1,2,3") || !strings.Contains(out, "Throttle was removed.") {
		t.Fatalf("verify of a completed move did not remove the throttle:\n%s", out)
	}
	requireRate(t, ctx, adm, 1, leaderThrottledRate, "9223372036854775807", kmsg.ConfigSourceDefaultConfig)
	requireRate(t, ctx, adm, 3, followerThrottledRate, strconv.Itoa(staticFollowerRate), kmsg.ConfigSourceStaticBrokerConfig)
	awaitLimiter(t, ctx, brokers[0], "leader", 9223372036854775807)
	awaitLimiter(t, ctx, brokers[2], "follower", staticFollowerRate)
	waitThrottleLists(t, ctx, adm, "moving", map[string]string{}, "--verify")
}

// fillAndPlan creates topic with one replica on leader, fills it with
// size bytes (uncompressed: the bytes copied are the bytes produced) and
// writes a plan that adds a replica on follower.
func fillAndPlan(t testing.TB, ctx context.Context, addr, topic string, leader, follower int32, size int) (*kadm.Client, string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(256<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
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
	value := make([]byte, 32<<10)
	var records []*kgo.Record
	for range size / len(value) {
		records = append(records, &kgo.Record{Value: value})
	}
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "plan.json")
	plan := reassignplan.Format([]reassignplan.Assignment{{Topic: topic, Partition: 0, Replicas: []int32{leader, follower}}})
	if err := os.WriteFile(file, plan, 0o644); err != nil {
		t.Fatal(err)
	}
	return kadm.NewClient(cl), file
}

// verifyUntilCompleted runs --verify until it says the move completed and
// returns that output.
func verifyUntilCompleted(t testing.TB, ctx context.Context, file, addr string) string {
	t.Helper()
	for {
		var out bytes.Buffer
		err := runPartitions(ctx, []string{"reassign", "--verify", "--plan", file, "-b", addr}, streams{in: strings.NewReader(""), out: &out, err: &out})
		if err != nil {
			t.Fatalf("--verify: %v\n%s", err, out.String())
		}
		if strings.Contains(out.String(), "is completed.") {
			return out.String()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("never completed:\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// requireRate checks a broker's rate and its source, as that broker
// describes it.
func requireRate(t *testing.T, ctx context.Context, adm *kadm.Client, broker int32, key, value string, source kmsg.ConfigSource) {
	t.Helper()
	rcs, err := adm.DescribeBrokerConfigs(ctx, broker)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(strconv.Itoa(int(broker)), nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe broker %d: %v %v", broker, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			if c.MaybeValue() != value || c.Source != source {
				t.Errorf("broker %d %s = %s from %s, want %s from %s", broker, key, c.MaybeValue(), c.Source, value, source)
			}
			return
		}
	}
	t.Errorf("broker %d describes no %s", broker, key)
}

// awaitLimiter waits until b's throttle of side runs at rate (its image
// may trail the controller's by a moment).
func awaitLimiter(t testing.TB, ctx context.Context, b *node.Broker, side string, rate float64) {
	t.Helper()
	for {
		got := throttleMetric(t, b, "skein_replication_throttle_rate_bytes", side)
		if got == rate {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s throttle of broker %s runs at %v B/s, want %v", side, b.Addr("PLAINTEXT"), got, rate)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// throttleMetric reads name{side=side} from b's registry, -1 if absent.
func throttleMetric(t testing.TB, b *node.Broker, name, side string) float64 {
	t.Helper()
	mfs, err := b.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "side" && l.GetValue() == side {
					if c := m.GetCounter(); c != nil {
						return c.GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
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

// TestPartitionsReassignVerifyShowsRate (issue 15): while a throttled
// copy runs, --verify looks at the moving replica twice --sample apart
// and says what it holds, how far behind it is, how fast it copies and
// about how long it has left (the arithmetic is TestEstimateCatchUp's).
// A 2 MiB copy at 512 KiB/s lasts seconds, so --verify sees it moving.
func TestPartitionsReassignVerifyShowsRate(t *testing.T) {
	brokers := startTestCluster(t, 3)
	addr := brokers[0].Addr("PLAINTEXT")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, file := fillAndPlan(t, ctx, addr, "paced", 1, 3, 2<<20)
	mustRun(t, runPartitions, "", "reassign", "--execute", "--plan", file, "-b", addr, "--throttle", strconv.Itoa(512<<10))
	progress := regexp.MustCompile(`is still in progress: replicas 1,3, adding 3, removing -; broker 3 holds [0-9.]+ [KMG]?i?B, [0-9.]+ [KMG]?i?B behind leader 1, copying [0-9.]+ [KMG]?i?B/s, (about [0-9hms.]+ left|caught up|not gaining on the leader)\.\n`)
	for {
		r := runCLI(t, runPartitions, "", "reassign", "--verify", "--sample", "300ms", "--plan", file, "-b", addr)
		if r.err != nil {
			t.Fatalf("--verify: %v\n%s%s", r.err, r.stdout, r.stderr)
		}
		out := r.stdout
		if progress.MatchString(out) {
			break
		}
		if strings.Contains(out, "is completed.") {
			t.Fatalf("the move completed before --verify showed its rate; last output:\n%s", out)
		}
		if !strings.Contains(out, "has no log yet") {
			t.Fatalf("verify of a throttled move:\n%s\nstderr:\n%s", out, r.stderr)
		}
	}
	if out := mustRun(t, runPartitions, "", "reassign", "--cancel", "--plan", file, "-b", addr); !strings.Contains(out, "paced-0") {
		t.Fatalf("cancel:\n%s", out)
	}
}
