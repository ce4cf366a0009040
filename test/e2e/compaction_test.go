package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/node"
)

// produced is what a compaction test wrote at one offset.
type produced struct {
	key       string
	value     string
	tombstone bool
}

// TestCompactedTopicServesLatestPerKey writes many updates of a few keys
// (and a deletion) to a compacted topic, runs the log cleaner, and reads
// the partition from the start with franz-go: every record it gets is the
// one written at that offset, every key's latest record is there (the
// deleted key as its tombstone, within delete.retention.ms), and the older
// updates are gone except in the active segment. A restart serves the
// same. A record without a key is refused.
func TestCompactedTopicServesLatestPerKey(t *testing.T) {
	tb := startBroker(t, withProp("log.cleaner.enable", "false")) // cleaned on demand below
	ctx := testContext(t, 45*time.Second)
	const topic = "compacted"
	tb.createTopic(topic, 1, map[string]*string{
		"cleanup.policy": kptr("compact"),
		"segment.bytes":  kptr("1024"),
	})
	cl := tb.client(kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))

	const keys, rounds = 5, 60
	written := map[int64]produced{}
	latest := map[string]int64{}
	send := func(p produced) {
		r := &kgo.Record{Key: []byte(p.key)}
		if !p.tombstone {
			r.Value = []byte(p.value)
		}
		res := cl.ProduceSync(ctx, r)
		if err := res.FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", p.key, err)
		}
		written[res[0].Record.Offset] = p
		latest[p.key] = res[0].Record.Offset
	}
	for round := range rounds {
		for k := range keys {
			send(produced{key: fmt.Sprintf("key-%d", k), value: fmt.Sprintf("v%d", round)})
		}
	}
	send(produced{key: "key-0", tombstone: true})
	for k := 1; k < keys; k++ { // fill the active segment past the tombstone's
		send(produced{key: fmt.Sprintf("key-%d", k), value: "final"})
	}
	end := int64(len(written))

	err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record: %v, want INVALID_RECORD", err)
	}

	if n := tb.b.CleanLogs(true); n != 1 {
		t.Fatalf("cleaner compacted %d partitions, want 1", n)
	}
	check := func(label string) {
		got := consumeAll(ctx, t, tb, topic, end)
		lastSeen := map[string]int64{}
		for _, r := range got {
			want, ok := written[r.Offset]
			tomb := r.Value == nil
			if !ok || want.key != string(r.Key) || want.tombstone != tomb || (!tomb && want.value != string(r.Value)) {
				t.Fatalf("%s: offset %d holds %q=%q, written %+v", label, r.Offset, r.Key, r.Value, want)
			}
			lastSeen[want.key] = r.Offset
		}
		for key, off := range latest {
			if lastSeen[key] != off {
				t.Fatalf("%s: key %s last seen at %d, latest written at %d", label, key, lastSeen[key], off)
			}
		}
		// 1024-byte segments hold about a dozen of these records: all
		// but the active segment's duplicates are gone.
		if len(got) > keys+20 {
			t.Fatalf("%s: %d records read back of %d written; compaction left too many", label, len(got), end)
		}
	}
	check("after compaction")
	tb.restart()
	check("after restart")
}

func kptr(s string) *string { return &s }

// consumeAll reads a partition from its start until the record before end.
func consumeAll(ctx context.Context, t *testing.T, tb *testBroker, topic string, end int64) []*kgo.Record {
	t.Helper()
	cl := tb.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var out []*kgo.Record
	for len(out) == 0 || out[len(out)-1].Offset < end-1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed up to %d of %d: %v", len(out), end, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// TestConsumerOffsetsCompacted commits offsets of one group many times and
// lets the background log cleaner (a short log.cleaner.backoff.ms) compact
// __consumer_offsets: the partition shrinks to a few batches, and after a
// restart the coordinator loads the latest commit from what is left.
func TestConsumerOffsetsCompacted(t *testing.T) {
	tb := startBroker(t,
		withProp("offsets.topic.num.partitions", "1"),
		withProp("offsets.topic.segment.bytes", "1024"),
		withProp("log.cleaner.backoff.ms", "20"))
	ctx := testContext(t, 45*time.Second)
	const topic, group, commits = "events", "compactor", 300
	tb.createTopic(topic, 2, nil)
	adm := kadm.NewClient(tb.client())
	for i := 1; i <= commits; i++ {
		var offsets kadm.Offsets
		offsets.AddOffset(topic, 0, int64(i), -1)
		offsets.AddOffset(topic, 1, int64(2*i), -1)
		resp, err := adm.CommitOffsets(ctx, group, offsets)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	// The cleaner runs on its own timer: wait (bounded) until it has
	// compacted the partition the commits went to.
	batches := func() int {
		bs, err := tb.b.ReplicaBatches("__consumer_offsets", 0)
		if err != nil {
			t.Fatalf("inspect __consumer_offsets: %v", err)
		}
		return len(bs)
	}
	for batches() > commits/4 {
		select {
		case <-ctx.Done():
			t.Fatalf("__consumer_offsets still holds %d batches for %d commits", batches(), commits)
		case <-time.After(20 * time.Millisecond): // an internal view, polled
		}
	}

	check := func(label string) {
		fetched, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatalf("%s: fetch offsets: %v", label, err)
		}
		for p, want := range map[int32]int64{0: commits, 1: 2 * commits} {
			o, ok := fetched.Lookup(topic, p)
			if !ok || o.Err != nil || o.At != want {
				t.Fatalf("%s: partition %d committed %+v, want %d", label, p, o, want)
			}
		}
	}
	check("after compaction")
	tb.restart()
	adm = kadm.NewClient(tb.client())
	check("after restart")
}

// TestCompactionAcrossReplicas checks compaction in a 3-broker cluster:
// while broker 3 is down, a compacted topic and __consumer_offsets get many
// updates and brokers 1 and 2 compact their replicas (leaders and
// followers alike); broker 3 then catches up by fetching the compacted
// logs, gaps included, and holds exactly the leader's batches. Finally the
// coordinator's broker stops and the new coordinator loads the latest
// commits from its compacted replica.
func TestCompactionAcrossReplicas(t *testing.T) {
	c := startCluster(t, 3, map[string]string{
		"offsets.topic.num.partitions":     "1",
		"offsets.topic.segment.bytes":      "1024",
		"log.cleaner.enable":               "false", // cleaned on demand below
		"group.initial.rebalance.delay.ms": "0",
	})
	ctx := testContext(t, 60*time.Second)
	adm := kadm.NewClient(c.client())
	const topic, group = "kv", "replicated"
	createReplicatedTopic(ctx, t, adm, topic, 1, 3, map[string]string{"cleanup.policy": "compact", "segment.bytes": "1024"})
	commit := func(i int) {
		var offsets kadm.Offsets
		offsets.AddOffset(topic, 0, int64(i), -1)
		resp, err := adm.CommitOffsets(ctx, group, offsets)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	commit(1) // creates __consumer_offsets while all three brokers are up
	awaitPartition(ctx, t, adm, "__consumer_offsets", 0, "a full ISR", func(v partitionView) bool { return len(v.ISR) == 3 })

	// What broker 3 holds when it stops; it copies the rest.
	had := map[string]int64{}
	for _, tp := range []string{topic, "__consumer_offsets"} {
		bs, err := c.brokers[2].ReplicaBatches(tp, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) > 0 {
			had[tp] = bs[len(bs)-1].LastOffset + 1
		}
	}
	c.stop(2)
	awaitPartition(ctx, t, adm, topic, 0, "broker 3 out of the ISR", func(v partitionView) bool { return !v.inISR(3) })
	cl := c.client(kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	latest := map[string]string{}
	for round := range 20 {
		for k := range 4 {
			key, value := fmt.Sprintf("key-%d", k), fmt.Sprintf("v%d", round)
			if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: []byte(value)}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			latest[key] = value
		}
	}
	const commits = 60
	for i := 2; i <= commits; i++ {
		commit(i)
	}
	for i := range 2 {
		if n := c.brokers[i].CleanLogs(true); n == 0 {
			t.Fatalf("broker %d compacted nothing", i+1)
		}
	}

	c.start(2)
	for _, tp := range []string{topic, "__consumer_offsets"} {
		v := awaitPartition(ctx, t, adm, tp, 0, "broker 3 back in the ISR", func(v partitionView) bool { return v.inISR(3) })
		leader, err := c.brokers[v.Leader-1].ReplicaBatches(tp, 0)
		if err != nil {
			t.Fatal(err)
		}
		copied, err := c.brokers[2].ReplicaBatches(tp, 0)
		if err != nil {
			t.Fatal(err)
		}
		from := func(bs []node.BatchInfo) []node.BatchInfo {
			return slices.DeleteFunc(bs, func(b node.BatchInfo) bool { return b.BaseOffset < had[tp] })
		}
		if !slices.Equal(from(leader), from(copied)) {
			t.Fatalf("%s: broker 3 holds\n%v\nthe leader holds\n%v", tp, copied, leader)
		}
		if last := leader[len(leader)-1].LastOffset; len(leader) > int(last+1)/2 {
			t.Fatalf("%s: %d batches up to offset %d: not compacted", tp, len(leader), last)
		}
	}

	coordinator := c.leaderOf(ctx, "__consumer_offsets", 0)
	c.stop(int(coordinator) - 1)
	live := slices.Delete(c.addrs(), int(coordinator)-1, int(coordinator))
	adm = kadm.NewClient(newSeededClient(t, live))
	fetched, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets from the new coordinator: %v", err)
	}
	if o, ok := fetched.Lookup(topic, 0); !ok || o.Err != nil || o.At != commits {
		t.Fatalf("new coordinator has %+v, want offset %d", o, commits)
	}
	reader := newSeededClient(t, live, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	seen := map[string]string{}
	for len(seen) < len(latest) || !maps.Equal(seen, latest) {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back %v, want %v: %v", seen, latest, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Key)] = string(r.Value) })
	}
}
