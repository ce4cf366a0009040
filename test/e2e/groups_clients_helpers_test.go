package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Consumer groups driven by sarama, kafka-go and kcat (librdkafka): each
// client joins a group through its own balancer, and the tests look at
// the assignment from the member's side where the client tells it
// (sarama's session claims, kcat's rebalance lines) and from the
// coordinator's side where it does not (kafka-go's Reader).

// Group timing for these tests: sessions of 3 s with 300 ms heartbeats,
// so a killed member is noticed quickly, and no initial rebalance delay.
const (
	clientGroupSession   = 3 * time.Second
	clientGroupHeartbeat = 300 * time.Millisecond
	clientGroupRejoin    = 100 * time.Millisecond // backoff before a member joins again
	clientGroupTopicSize = 6                      // partitions of the topic the members share
)

// startGroupBroker starts one broker that hosts groups quickly: no initial
// rebalance delay, sessions as short as 1 s, and a small one-replica
// __consumer_offsets.
func startGroupBroker(t testing.TB) *testBroker {
	t.Helper()
	return startBroker(t,
		withProp("group.initial.rebalance.delay.ms", "0"),
		withProp("group.min.session.timeout.ms", "1000"),
		withProp("offsets.topic.replication.factor", "1"),
		withProp("offsets.topic.num.partitions", "3"))
}

// ownership is the set of partitions a member was last assigned, as its
// client reported it; safe for the client's callbacks and the test.
type ownership struct {
	mu    sync.Mutex
	parts map[int32]bool
}

func (o *ownership) set(parts []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.parts = map[int32]bool{}
	for _, p := range parts {
		o.parts[p] = true
	}
}

// change adds or removes partitions, for clients that report only what
// changed (cooperative rebalancing).
func (o *ownership) change(parts []int32, add bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.parts == nil {
		o.parts = map[int32]bool{}
	}
	for _, p := range parts {
		if add {
			o.parts[p] = true
		} else {
			delete(o.parts, p)
		}
	}
}

func (o *ownership) owned() []int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Sorted(maps.Keys(o.parts))
}

// partitionOwner is a group member whose current assignment a test can read.
type partitionOwner interface {
	owned() []int32
}

// awaitPartitionOwners waits until the named members own disjoint,
// non-empty sets of partitions that together cover 0..partitions-1. The
// clients' assignment callbacks give no single event across members, so
// this polls their reports until the context's deadline.
func awaitPartitionOwners(ctx context.Context, t testing.TB, partitions int32, members map[string]partitionOwner) {
	t.Helper()
	names := slices.Sorted(maps.Keys(members))
	var last string
	for {
		covered := map[int32]int{}
		ok := true
		var b strings.Builder
		for _, name := range names {
			own := members[name].owned()
			fmt.Fprintf(&b, " %s=%v", name, own)
			ok = ok && len(own) > 0
			for _, p := range own {
				covered[p]++
			}
		}
		for p := range partitions {
			ok = ok && covered[p] == 1
		}
		last = b.String()
		if ok && len(covered) == int(partitions) {
			t.Logf("assignment:%s", last)
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("members never split the %d partitions between them; last:%s", partitions, last)
		case <-time.After(externalPollInterval):
		}
	}
}

// clientGroupMember is a member that a test can stop: leave() stops the
// client so that it leaves the group (or, for a process, kills it).
type clientGroupMember interface {
	partitionOwner
	leave()
}

// recordFunc is told of every record a member reads, in order within a
// partition; the member commits the record (synchronously, before reading
// on) when it returns true. nil: commit nothing.
type recordFunc func(partition int32, offset int64) (commit bool)

// joinFunc starts one member of a group, named uniquely in the group.
type joinFunc func(ctx context.Context, t *testing.T, tb *testBroker, group, topic, name string, onRecord recordFunc) clientGroupMember

// testGroupShareAndRebalance runs the scenario every client must pass:
// two members split a 6-partition topic; when one leaves, the other owns
// all six within the session timeout; a third member then gets a share.
func testGroupShareAndRebalance(t *testing.T, join joinFunc) {
	tb := startGroupBroker(t)
	ctx := testContext(t, time.Minute)
	const group, topic = "sharers", "shared"
	tb.createTopic(topic, clientGroupTopicSize, nil)

	a := join(ctx, t, tb, group, topic, "a", nil)
	b := join(ctx, t, tb, group, topic, "b", nil)
	awaitPartitionOwners(ctx, t, clientGroupTopicSize, map[string]partitionOwner{"a": a, "b": b})

	a.leave()
	awaitPartitionOwners(ctx, t, clientGroupTopicSize, map[string]partitionOwner{"b": b})

	c := join(ctx, t, tb, group, topic, "c", nil)
	awaitPartitionOwners(ctx, t, clientGroupTopicSize, map[string]partitionOwner{"b": b, "c": c})
}

// testGroupCommitAndResume: a member reads ten records in each of six
// partitions and commits those below offset 5; after it leaves, the
// coordinator holds offset 5 for every partition, and the next member of
// the group starts reading exactly there.
func testGroupCommitAndResume(t *testing.T, join joinFunc) {
	tb := startGroupBroker(t)
	ctx := testContext(t, time.Minute)
	const group, topic, perPartition, commitBelow = "resumers", "resumed", 10, 5
	tb.createTopic(topic, clientGroupTopicSize, nil)
	produceToEachPartition(ctx, t, tb, topic, clientGroupTopicSize, perPartition)

	var mu sync.Mutex
	read, allRead := 0, make(chan struct{})
	first := join(ctx, t, tb, group, topic, "first", func(_ int32, offset int64) bool {
		mu.Lock()
		defer mu.Unlock()
		if read++; read == clientGroupTopicSize*perPartition {
			close(allRead)
		}
		return offset < commitBelow
	})
	select {
	case <-allRead:
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the first member read %d of %d records before the deadline", read, clientGroupTopicSize*perPartition)
	}
	first.leave()
	want := map[int32]int64{}
	for p := range int32(clientGroupTopicSize) {
		want[p] = commitBelow
	}
	if got := committedOffsets(ctx, t, tb, group); !maps.Equal(got, want) {
		t.Fatalf("committed offsets %v, want %v", got, want)
	}

	resumed := newFirstOffsets(clientGroupTopicSize)
	second := join(ctx, t, tb, group, topic, "second", func(p int32, offset int64) bool {
		resumed.see(p, offset)
		return false
	})
	expectResumedAt(t, "the second member", resumed.await(ctx, t), commitBelow)
	second.leave()
}

// produceToEachPartition writes n records to every partition of topic
// (values "p/i") and waits for all of them (acks=all).
func produceToEachPartition(ctx context.Context, t testing.TB, tb *testBroker, topic string, partitions int32, n int) {
	t.Helper()
	cl := tb.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p := range partitions {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d/%d", p, i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// committedOffsets is the group's committed offset of every partition,
// as the coordinator answers OffsetFetch.
func committedOffsets(ctx context.Context, t testing.TB, tb *testBroker, group string) map[int32]int64 {
	t.Helper()
	fetched, err := kadm.NewClient(tb.client()).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	out := map[int32]int64{}
	fetched.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			t.Fatalf("offset of %s-%d: %v", o.Topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.At
	})
	return out
}

// firstOffsets records the first offset a member read in each partition:
// where the group let it resume.
type firstOffsets struct {
	mu    sync.Mutex
	first map[int32]int64
	all   chan struct{} // closed once every partition has been seen
	want  int
}

func newFirstOffsets(partitions int) *firstOffsets {
	return &firstOffsets{first: map[int32]int64{}, all: make(chan struct{}), want: partitions}
}

func (f *firstOffsets) see(partition int32, offset int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.first[partition]; ok {
		return
	}
	f.first[partition] = offset
	if len(f.first) == f.want {
		close(f.all)
	}
}

// await waits until every partition has been read from and returns the
// first offsets, sorted by partition for messages.
func (f *firstOffsets) await(ctx context.Context, t testing.TB) map[int32]int64 {
	t.Helper()
	select {
	case <-f.all:
	case <-ctx.Done():
		f.mu.Lock()
		defer f.mu.Unlock()
		t.Fatalf("read from %d of %d partitions before the deadline: %v", len(f.first), f.want, f.first)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.first)
}

// expectResumedAt fails unless every partition's first offset is want.
func expectResumedAt(t testing.TB, who string, first map[int32]int64, want int64) {
	t.Helper()
	for _, p := range slices.Sorted(maps.Keys(first)) {
		if first[p] != want {
			t.Errorf("%s resumed partition %d at offset %d, want %d (all: %v)", who, p, first[p], want, first)
		}
	}
}
