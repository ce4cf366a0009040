package e2e

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/vfs"
)

// TestClusterRestartedBrokerActsOnlyWhenCaughtUp: a broker that led both
// partitions of a topic is killed, the controller moves the leaderships
// away, and the broker restarts. Its own metadata log replays an image in
// which it still leads them. It must not act on that image: no leadership
// (a produce it accepted would be acknowledged and then truncated away by
// the real leader's history), no fetching from the leaders it names.
//
// The dangerous moment is the one `skein verify` seed 213 hit: a reconcile
// pass that began on the stale replay (opening logs takes a while after a
// crash) is still applying it when the registration completes; the roles
// it then gives must still come from the image it applies, which predates
// the registration. The test holds that moment still: the broker's
// filesystem holds its metadata log (no new commit applies) until the pass
// reaches the topic, and holds the pass while the broker registers and
// again at the second partition, when the first has had its role applied
// and the client listener is open. A produce then gets
// NOT_LEADER_OR_FOLLOWER. (Without the rule the broker led the partition
// at its old epoch and acknowledged the produce.)
func TestClusterRestartedBrokerActsOnlyWhenCaughtUp(t *testing.T) {
	c := startCluster(t, 3, nil)
	haltAllAtEnd(t, c)
	ctx := testContext(t, time.Minute)
	adm := observerClient(t, c.addrs())
	ctrl := awaitActiveController(ctx, t, c, func(int32) bool { return true })
	x := otherBrokers(3, ctrl)[0] // not the controller: its kill moves nothing else
	const topic = "stale-lead"
	replicas := append([]int32{x}, otherBrokers(3, x)...)
	createAssignedTopic(ctx, t, newSeededClient(t, c.addrs()), topic, [][]int32{replicas, replicas})
	var ledEpoch [2]int32
	for p := range int32(2) {
		v := awaitPartition(ctx, t, adm, topic, p, "the restarted-to-be broker leading with a full ISR", func(v partitionView) bool {
			return v.Leader == x && len(v.ISR) == 3
		})
		ledEpoch[p] = v.LeaderEpoch
	}
	cl := newSeededClient(t, c.addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(value string) {
		t.Helper()
		for p := range int32(2) {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(value)}).FirstErr(); err != nil {
				t.Fatalf("produce %q to partition %d: %v", value, p, err)
			}
		}
	}
	produce("before the restart")

	c.kill(int(x) - 1)
	for p := range int32(2) {
		awaitPartition(ctx, t, adm, topic, p, "a leader other than the killed broker", func(v partitionView) bool {
			return v.Leader > 0 && v.Leader != x
		})
	}
	produce("while it was down")

	gate := newCatchUpGate(topic)
	t.Cleanup(gate.releaseAll) // before haltAllAtEnd's halt: cleanups run last-in first
	logs := newLogWatcher()
	if testing.Verbose() {
		logs.echo = os.Stderr
	}
	c.startWith(int(x)-1, node.Options{FS: gate, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	b := c.brokers[x-1]

	first := awaitGate(ctx, t, gate.reached, "the reconcile of the replayed image to open the topic")
	if p, ok := partitionOf(b.Image(), topic, first); !ok || p.Leader != x || p.LeaderEpoch != ledEpoch[first] {
		t.Fatalf("precondition: the restarted broker's image should be its stale replay, leading %s-%d at epoch %d; it holds %+v", topic, first, ledEpoch[first], p)
	}
	gate.release(&gate.metadata)
	select {
	case <-logs.seen("registered with the controller"):
	case <-ctx.Done():
		t.Fatalf("the restarted broker did not register: %v\n%s", ctx.Err(), logs.tail())
	}
	gate.release(&gate.opens[0])
	awaitGate(ctx, t, gate.reached, "the reconcile pass to reach the second partition")

	// The pass has applied its (stale) image to partition first, after the
	// registration; the client listener is open.
	req := produceRequest(9, 1, topic, first, recordsBatch(1, 20))
	resp, err := rawRequest(ctx, c.addrs()[x-1], req)
	if err != nil {
		t.Fatalf("produce to the restarted broker: %v", err)
	}
	rp := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != kerr.NotLeaderForPartition {
		t.Errorf("the restarted broker answered a produce to %s-%d with %v (offset %d) while applying its stale image (leader there at epoch %d); want NOT_LEADER_OR_FOLLOWER",
			topic, first, err, rp.BaseOffset, ledEpoch[first])
	}
	gate.release(&gate.opens[1])

	// Caught up, it follows the real leaders and rejoins the ISRs; every
	// partition holds exactly what was acknowledged, on every replica.
	for p := range int32(2) {
		awaitPartition(ctx, t, adm, topic, p, "the restarted broker back in the ISR", func(v partitionView) bool { return v.inISR(x) })
	}
	produce("after it caught up")
	read := readValues(ctx, t, c.addrs(), topic, 2*3)
	for p := range int32(2) {
		want := []string{"before the restart", "while it was down", "after it caught up"}
		if got := read[p]; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("partition %d holds %q, want %q", p, got, want)
		}
	}
}

// catchUpGate is the restarted broker's filesystem: the OS's, with two
// holds. Saving Raft's hard state waits for metadata (so no entry committed
// after the restart applies: the image stays the local replay); opening the
// first two partitions of topic waits for opens[0] and opens[1], each
// reported on reached first.
type catchUpGate struct {
	vfs.FS
	topic    string
	reached  chan int32
	metadata chan struct{}
	opens    [2]chan struct{}

	mu       sync.Mutex
	n        int
	released map[*chan struct{}]bool
}

func newCatchUpGate(topic string) *catchUpGate {
	return &catchUpGate{FS: vfs.OS{}, topic: topic, reached: make(chan int32, 2), metadata: make(chan struct{}),
		opens: [2]chan struct{}{make(chan struct{}), make(chan struct{})}, released: map[*chan struct{}]bool{}}
}

func (g *catchUpGate) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	base, dir := filepath.Base(name), filepath.Base(filepath.Dir(name))
	switch {
	case base == "hardstate.tmp":
		<-g.metadata
	case base == "partition.metadata" && strings.HasPrefix(dir, g.topic+"-"):
		// The first file a reconcile reads of a partition it opens.
		index, err := strconv.Atoi(strings.TrimPrefix(dir, g.topic+"-"))
		if err != nil {
			return nil, err
		}
		g.mu.Lock()
		n := g.n
		g.n++
		g.mu.Unlock()
		if n < len(g.opens) {
			g.reached <- int32(index)
			<-g.opens[n]
		}
	}
	return g.FS.OpenFile(name, flag, perm)
}

func (g *catchUpGate) release(ch *chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.released[ch] {
		g.released[ch] = true
		close(*ch)
	}
}

func (g *catchUpGate) releaseAll() {
	g.release(&g.metadata)
	for i := range g.opens {
		g.release(&g.opens[i])
	}
}

func awaitGate(ctx context.Context, t testing.TB, reached <-chan int32, what string) int32 {
	t.Helper()
	select {
	case p := <-reached:
		return p
	case <-ctx.Done():
		t.Fatalf("waiting for %s: %v", what, ctx.Err())
		return -1
	}
}

// partitionOf is one partition of a topic in an image.
func partitionOf(im *metadata.Image, topic string, index int32) (metadata.Partition, bool) {
	t, ok := im.Topic(topic)
	if !ok || index < 0 || int(index) >= len(t.Partitions) {
		return metadata.Partition{}, false
	}
	return t.Partitions[index], true
}

// readValues consumes topic from the start until it has read want records,
// and returns their values by partition.
func readValues(ctx context.Context, t testing.TB, seeds []string, topic string, want int) map[int32][]string {
	t.Helper()
	cl := newSeededClient(t, seeds, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	out := map[int32][]string{}
	total := 0
	for total < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s back: %v; got %v", topic, err, out)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out[r.Partition] = append(out[r.Partition], string(r.Value))
			total++
		})
	}
	return out
}
