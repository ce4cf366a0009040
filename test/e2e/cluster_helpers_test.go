package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Helpers shared by the replicated-cluster tests (cluster_*_test.go). They
// speak only the Kafka protocol, so they serve the in-process cluster and
// the multi-process one alike.

// externalPollInterval is how often a test re-reads an external view
// (Metadata) while it waits for the cluster to reach a state. Always
// bounded by the caller's context.
const externalPollInterval = 50 * time.Millisecond

// newSeededClient is a franz-go client seeded with the given brokers,
// closed when the test ends.
func newSeededClient(t testing.TB, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// observerClient is an admin client for watching the cluster. franz-go
// answers a Metadata request from its cache for MetadataMinAge (5 s by
// default), which would show a test a stale ISR; and it retries quickly, so
// a request that first picked a dead broker soon moves on to a live one.
func observerClient(t testing.TB, seeds []string) *kadm.Client {
	return kadm.NewClient(newSeededClient(t, seeds,
		kgo.MetadataMinAge(10*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }),
		kgo.DialTimeout(time.Second)))
}

// createReplicatedTopic creates a topic through any broker (admin requests
// are forwarded to the controller) and waits until every partition has a
// leader and a full ISR.
func createReplicatedTopic(ctx context.Context, t testing.TB, adm *kadm.Client, topic string, partitions int32, rf int16, configs map[string]string) {
	t.Helper()
	cfg := map[string]*string{}
	for k, v := range configs {
		cfg[k] = &v
	}
	resp, err := adm.CreateTopic(ctx, partitions, rf, cfg, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
	}
	for p := range partitions {
		awaitPartition(ctx, t, adm, topic, p, "a leader and a full ISR", func(v partitionView) bool {
			return v.Leader >= 0 && len(v.ISR) == int(rf)
		})
	}
}

// partitionView is one partition as a Metadata answer describes it.
type partitionView struct {
	Leader      int32
	LeaderEpoch int32
	ISR         []int32
}

func (v partitionView) String() string {
	return fmt.Sprintf("leader %d epoch %d isr %v", v.Leader, v.LeaderEpoch, v.ISR)
}

// inISR reports whether a broker is in the partition's ISR.
func (v partitionView) inISR(id int32) bool { return slices.Contains(v.ISR, id) }

// describeTimeout bounds one Metadata call: a paused (SIGSTOP) broker
// accepts the connection and never answers, and the next poll should try
// another broker rather than wait for it.
const describeTimeout = time.Second

// describePartition asks the cluster (any broker) for one partition.
func describePartition(ctx context.Context, adm *kadm.Client, topic string, partition int32) (partitionView, error) {
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return partitionView{}, fmt.Errorf("metadata: %w", err)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return partitionView{}, fmt.Errorf("topic %s: %v", topic, td.Err)
	}
	pd, ok := td.Partitions[partition]
	if !ok {
		return partitionView{}, fmt.Errorf("no partition %s/%d", topic, partition)
	}
	v := partitionView{Leader: pd.Leader, LeaderEpoch: pd.LeaderEpoch, ISR: slices.Clone(pd.ISR)}
	slices.Sort(v.ISR)
	if pd.Err != nil {
		return v, fmt.Errorf("partition %s/%d: %w", topic, partition, pd.Err)
	}
	return v, nil
}

// awaitPartition re-reads Metadata until cond holds for the partition and
// returns the view that satisfied it. It fails the test, showing the last
// view, when ctx ends first.
func awaitPartition(ctx context.Context, t testing.TB, adm *kadm.Client, topic string, partition int32, what string, cond func(partitionView) bool) partitionView {
	t.Helper()
	var last partitionView
	var lastErr error
	for {
		v, err := describePartition(ctx, adm, topic, partition)
		if err == nil && cond(v) {
			return v
		}
		last, lastErr = v, err
		select {
		case <-ctx.Done():
			t.Fatalf("%s/%d never had %s; last seen: %v (err %v)", topic, partition, what, last, lastErr)
		case <-time.After(externalPollInterval):
		}
	}
}

// awaitLeaderISR waits until broker's own leader state of topic-partition
// has an ISR of n. Metadata (from any broker) can show a shrunk ISR a
// moment before the leader applies it: a write in that window is appended
// (its acks=all wait then fails with NOT_ENOUGH_REPLICAS_AFTER_APPEND, as in
// Kafka, and the record stays), or, before the leader learns it leads,
// refused with NOT_LEADER_OR_FOLLOWER.
func awaitLeaderISR(ctx context.Context, t testing.TB, c *testCluster, broker int32, topic string, partition int32, n int) {
	t.Helper()
	for {
		isr, ok := c.brokers[broker-1].LeaderISR(topic, partition)
		if ok && len(isr) == n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("broker %d's ISR of %s-%d never had %d members (leads: %v): %v", broker, topic, partition, n, ok, isr)
		case <-time.After(externalPollInterval):
		}
	}
}

// awaitActiveController waits until every running broker names the same
// live active controller, one for which accept holds, and returns it. (The
// Metadata response cannot tell: like Kafka in KRaft mode, it names any
// live broker as "controller", since admin requests are forwarded.) The
// brokers' own view is read, polled like an external one.
func awaitActiveController(ctx context.Context, t testing.TB, c *testCluster, accept func(id int32) bool) int32 {
	t.Helper()
	for {
		agreed := int32(-1)
		for _, b := range c.brokers {
			if b == nil {
				continue
			}
			id := b.ControllerID()
			if id < 1 || int(id) > len(c.brokers) || c.brokers[id-1] == nil || (agreed >= 0 && id != agreed) {
				agreed = -2
				break
			}
			agreed = id
		}
		if agreed > 0 && accept(agreed) {
			return agreed
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the brokers never agreed on an acceptable live controller: %v", ctx.Err())
		case <-time.After(externalPollInterval):
		}
	}
}

// otherBrokers lists the broker ids 1..n except the given ones.
func otherBrokers(n int, except ...int32) []int32 {
	var out []int32
	for id := int32(1); id <= int32(n); id++ {
		if !slices.Contains(except, id) {
			out = append(out, id)
		}
	}
	return out
}

// replicasOf is the replica set of a partition, as Metadata reports it.
func replicasOf(ctx context.Context, t testing.TB, adm *kadm.Client, topic string, partition int32) []int32 {
	t.Helper()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	pd, ok := md.Topics[topic].Partitions[partition]
	if !ok {
		t.Fatalf("no partition %s/%d in metadata", topic, partition)
	}
	return slices.Clone(pd.Replicas)
}

// haltAllAtEnd crashes every broker still running when the test ends,
// before the harness's clean stops run. A clean stop of the last brokers
// of a cluster that lost its quorum waits out the controlled-shutdown
// timeout; these tests check failover, not shutdown, so they skip that.
func haltAllAtEnd(t testing.TB, c *testCluster) {
	t.Cleanup(func() {
		c.dumpGoroutinesIfFailed()
		for i := range c.brokers {
			c.kill(i)
		}
	})
}
