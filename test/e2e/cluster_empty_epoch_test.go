package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/node"
)

// TestClusterFollowerDropsAnEpochItLedWithoutWriting: a broker that led an
// epoch without appending anything keeps that epoch, starting at its log
// end, in its leader-epoch cache. When the next leader never had that
// epoch, the follower's fetches name it as their last fetched epoch and the
// leader answers "diverging" at the follower's own log end; truncating
// there cuts no record, so unless the empty epoch leaves the cache the
// follower asks the same question forever, never fetches again, and its
// partition keeps a short ISR with nothing in the logs (found by skein
// verify: an ISR shrunk for the whole 90 s heal phase).
//
// Replicas [4, 5, 6]: 4 writes e0; 4 dies, 5 leads e1 and writes nothing;
// 4 returns and a preferred election gives it e2 while 5 lives. 5 must
// copy what 4 writes in e2.
func TestClusterFollowerDropsAnEpochItLedWithoutWriting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := startRolesCluster(t,
		[]string{controllerOnly, controllerOnly, controllerOnly, brokerOnly, brokerOnly, brokerOnly},
		map[string]string{
			// Long: a follower that stopped copying stays in the ISR, so
			// the check below is on its log, not on ISR timing.
			"replica.lag.time.max.ms":      "60000",
			"auto.leader.rebalance.enable": "false",
		}, node.Options{})
	const first, second = int32(4), int32(5)
	adm := observerClient(t, c.addrs())
	const topic = "empty-epoch"
	createAssignedTopic(ctx, t, newSeededClient(t, c.addrs()), topic, [][]int32{{first, second, 6}})
	awaitPartition(ctx, t, adm, topic, 0, "broker 4 leading with a full ISR", func(v partitionView) bool {
		return v.Leader == first && len(v.ISR) == 3
	})
	one := newSeededClient(t, c.addrs(), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	produce := func(from, to int) {
		t.Helper()
		for n := from; n < to; n++ {
			if err := one.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(strconv.Itoa(n))}).FirstErr(); err != nil {
				t.Fatalf("record %d: %v", n, err)
			}
		}
	}
	logEnd := func(id int32) int64 {
		bs, err := c.brokers[id-1].ReplicaBatches(topic, 0)
		if err != nil || len(bs) == 0 {
			return 0
		}
		return bs[len(bs)-1].LastOffset + 1
	}
	awaitLogEnd := func(waitCtx context.Context, id int32, want int64) {
		t.Helper()
		for logEnd(id) != want {
			select {
			case <-waitCtx.Done():
				t.Fatalf("replica on %d ends at %d, want %d", id, logEnd(id), want)
			case <-time.After(10 * time.Millisecond): // an internal view, polled
			}
		}
	}

	produce(0, 10)
	for _, id := range []int32{first, second, 6} {
		awaitLogEnd(ctx, id, 10)
	}
	// e1: 5 leads and writes nothing.
	c.kill(int(first) - 1)
	awaitPartition(ctx, t, adm, topic, 0, "broker 5 leading", func(v partitionView) bool { return v.Leader == second })
	c.start(int(first) - 1)
	awaitPartition(ctx, t, adm, topic, 0, "broker 4 back in the ISR", func(v partitionView) bool { return v.inISR(first) })
	// e2: 4 leads again while 5 lives; 4 never had e1.
	if _, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}}); err != nil {
		t.Fatalf("preferred election: %v", err)
	}
	awaitPartition(ctx, t, adm, topic, 0, "broker 4 leading again", func(v partitionView) bool { return v.Leader == first })
	c.awaitDeposed(ctx, topic, 0, first) // else 5 may still take acks=1 writes in e1
	produce(10, 20)
	copyCtx, copyCancel := context.WithTimeout(ctx, 15*time.Second)
	defer copyCancel()
	awaitLogEnd(copyCtx, second, 20)
}
