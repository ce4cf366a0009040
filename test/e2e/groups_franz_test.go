package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupClusterProps keeps group coordination quick in tests through
// configuration: no initial rebalance delay, short sessions allowed, and a
// small __consumer_offsets (50 partitions times 3 replicas would dominate
// the start-up of a test cluster on two cores).
var groupClusterProps = map[string]string{
	"group.initial.rebalance.delay.ms": "0",
	"group.min.session.timeout.ms":     "1000",
	"offsets.topic.num.partitions":     "10",
}

// groupMember is a franz-go group consumer (cooperative-sticky) that
// tracks the partitions the group gave it.
type groupMember struct {
	name string
	cl   *kgo.Client
	mu   sync.Mutex
	own  map[int32]bool
}

func newGroupMember(t testing.TB, seeds []string, name, groupID, topic string, opts ...kgo.Opt) *groupMember {
	t.Helper()
	m := &groupMember{name: name, own: map[int32]bool{}}
	update := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range parts[topic] {
				if add {
					m.own[p] = true
				} else {
					delete(m.own, p)
				}
			}
		}
	}
	m.cl = newSeededClient(t, seeds, append([]kgo.Opt{
		kgo.ConsumerGroup(groupID),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(3 * time.Second),
		kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.DialTimeout(time.Second),
		kgo.OnPartitionsAssigned(update(true)),
		kgo.OnPartitionsRevoked(update(false)),
		kgo.OnPartitionsLost(update(false)),
	}, opts...)...)
	return m
}

func (m *groupMember) owned() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.own))
}

// awaitSplit waits until the members own disjoint, non-empty sets of
// partitions that together cover 0..partitions-1.
func awaitSplit(ctx context.Context, t testing.TB, partitions int32, members ...*groupMember) {
	t.Helper()
	describe := func() string {
		s := ""
		for _, m := range members {
			s += fmt.Sprintf(" %s=%v", m.name, m.owned())
		}
		return s
	}
	for {
		covered := map[int32]int{}
		ok := true
		for _, m := range members {
			own := m.owned()
			if len(own) == 0 {
				ok = false
			}
			for _, p := range own {
				covered[p]++
			}
		}
		for p := range partitions {
			if covered[p] != 1 {
				ok = false
			}
		}
		if ok && len(covered) == int(partitions) {
			t.Logf("assignment:%s", describe())
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("members never split the %d partitions; last:%s", partitions, describe())
		case <-time.After(externalPollInterval): // the callbacks have no event a test can wait on
		}
	}
}

// TestGroupFranzMembersShareAndRebalance: on a 3-broker cluster, two
// cooperative-sticky members split a 6-partition topic; when one leaves,
// the other owns all six; a third member then gets a share. The broker's
// DescribeGroups agrees with what the members were told.
func TestGroupFranzMembersShareAndRebalance(t *testing.T) {
	c := startCluster(t, 3, groupClusterProps)
	haltAllAtEnd(t, c)
	ctx := testContext(t, time.Minute)
	const topic, groupID = "shared", "sharers"
	adm := observerClient(t, c.addrs())
	createReplicatedTopic(ctx, t, adm, topic, 6, 3, nil)

	a := newGroupMember(t, c.addrs(), "a", groupID, topic)
	b := newGroupMember(t, c.addrs(), "b", groupID, topic)
	awaitSplit(ctx, t, 6, a, b)

	a.cl.Close() // leaves the group
	awaitSplit(ctx, t, 6, b)

	d := newGroupMember(t, c.addrs(), "d", groupID, topic)
	awaitSplit(ctx, t, 6, b, d)

	// The coordinator's view: Stable, two members, the same assignment.
	var described kadm.DescribedGroup
	for {
		groups, err := adm.DescribeGroups(ctx, groupID)
		if err != nil {
			t.Fatalf("describe groups: %v", err)
		}
		described = groups[groupID]
		if described.Err == nil && described.State == "Stable" && len(described.Members) == 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group never Stable with 2 members: %+v", described)
		case <-time.After(externalPollInterval):
		}
	}
	total := 0
	for _, m := range described.Members {
		ca, ok := m.Assigned.AsConsumer()
		if !ok {
			t.Fatalf("member %s: assignment is not a consumer assignment", m.MemberID)
		}
		for _, tp := range ca.Topics {
			total += len(tp.Partitions)
		}
	}
	if total != 6 {
		t.Fatalf("DescribeGroups assigns %d partitions, want 6: %+v", total, described.Members)
	}
	if described.Protocol != "cooperative-sticky" {
		t.Fatalf("group protocol %q, want cooperative-sticky", described.Protocol)
	}
}

// TestGroupFranzCoordinatorFailover: a member consumes and commits; the
// broker coordinating its group is killed; the new coordinator (which
// loads the group from the replicated __consumer_offsets) still has the
// commits, the member goes on and commits more there; a member started
// after it stops resumes exactly after its last commit: nothing skipped,
// nothing committed delivered again.
func TestGroupFranzCoordinatorFailover(t *testing.T) {
	c := startCluster(t, 3, groupClusterProps)
	haltAllAtEnd(t, c)
	ctx := testContext(t, time.Minute)
	const topic, groupID = "ledger", "auditors"
	adm := observerClient(t, c.addrs())
	createReplicatedTopic(ctx, t, adm, topic, 6, 3, nil)
	producer := newSeededClient(t, c.addrs(), kgo.DefaultProduceTopic(topic),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }), kgo.DialTimeout(time.Second))

	produceValues(ctx, t, producer, topic, 0, 60)
	a := newGroupMember(t, c.addrs(), "a", groupID, topic, kgo.DisableAutoCommit())
	pollValues(ctx, t, a.cl, 60)
	if err := a.cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit before the crash: %v", err)
	}

	coordinator := groupCoordinator(ctx, t, adm, groupID)
	c.kill(int(coordinator) - 1)
	t.Logf("killed broker %d, the coordinator of %q", coordinator, groupID)
	// franz-go caches a group's coordinator and keeps dialing a dead one;
	// a client made now asks afresh.
	adm = observerClient(t, c.addrs())

	if got := committedTotal(ctx, t, adm, groupID); got != 60 {
		t.Fatalf("after the crash the group's commits cover %d records, want 60", got)
	}
	if now := groupCoordinator(ctx, t, adm, groupID); now == coordinator {
		t.Fatalf("broker %d still named coordinator after it was killed", now)
	}

	produceValues(ctx, t, producer, topic, 60, 60)
	pollValues(ctx, t, a.cl, 60)
	if err := a.cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit after the crash: %v", err)
	}
	if got := committedTotal(ctx, t, adm, groupID); got != 120 {
		t.Fatalf("commits cover %d records, want 120", got)
	}
	// Consumed but never committed: a successor must get these again.
	produceValues(ctx, t, producer, topic, 120, 30)
	pollValues(ctx, t, a.cl, 30)
	a.cl.Close()

	b := newGroupMember(t, c.addrs(), "b", groupID, topic)
	seen := map[string]int{}
	for len(seen) < 30 {
		fs := b.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("successor got %d of 30 uncommitted records: %v", len(seen), ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			n, _ := strconv.Atoi(string(r.Value))
			if n < 120 {
				t.Fatalf("successor got record %d, which was committed", n)
			}
			seen[string(r.Value)]++
		})
	}
}

// groupCoordinator asks the cluster which broker coordinates a group.
func groupCoordinator(ctx context.Context, t testing.TB, adm *kadm.Client, groupID string) int32 {
	t.Helper()
	for {
		resp := adm.FindGroupCoordinators(ctx, groupID)
		if r, ok := resp[groupID]; ok && r.Err == nil {
			return r.NodeID
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no coordinator for %q: %v", groupID, resp)
		case <-time.After(externalPollInterval):
		}
	}
}

// committedTotal sums a group's committed offsets (with records numbered
// from 0 in every partition's log, the number of records they cover). It
// retries while the request fails: right after a crash the client may
// still dial the dead coordinator.
func committedTotal(ctx context.Context, t testing.TB, adm *kadm.Client, groupID string) int64 {
	t.Helper()
	for {
		offsets, err := adm.FetchOffsets(ctx, groupID)
		if err == nil {
			err = offsets.Error()
		}
		if err == nil {
			var total int64
			offsets.Each(func(o kadm.OffsetResponse) { total += o.At })
			return total
		}
		select {
		case <-ctx.Done():
			t.Fatalf("fetch offsets of %q: %v", groupID, err)
		case <-time.After(externalPollInterval):
		}
	}
}
