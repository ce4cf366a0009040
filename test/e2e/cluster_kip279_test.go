package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/node"
)

// TestClusterKIP279DivergenceOverSeveralEpochs forces, with clean
// elections only, the fast leader changes of KIP-279 so that two replicas
// end up with logs that diverge from the final leader's in two epochs
// each, and shows that after everything heals every replica holds exactly
// the leader's log, batch for batch, and that no acks=all record was lost.
//
// Replicas [1, 2, 3] (1 preferred; brokers 4, 5, 6 in the code). Paused fetchers (the broker keeps
// heartbeating) stand in for followers that fall behind without leaving
// the ISR (replica.lag.time.max.ms is long); kills move leadership by
// fencing; one preferred election moves it while the old leader lives.
//
//	e0  leader 1: records 0-9 acks=all, on all three.
//	    2 pauses; 1 writes r10,r11 (acks=1), 3 copies them; 3 pauses.
//	e1  1 killed -> leader 2 writes r12-r14 at offsets 10-12.
//	    1 restarts, truncates to 10 and copies 2's epoch-1 records.
//	e2  preferred election -> leader 1 writes r15,r16 at 13-14; 2 is paused.
//	e3  1 killed -> leader 2 (still in the ISR) writes r17,r18 at 13-14.
//	    Now 2's log diverges from 3's in e1 and e3 (1's in e1 and e2).
//	e4  2 killed -> leader 3 (offsets 0-11 in e0) writes 19-28 acks=all.
//	    1 and 2 restart. 2 asks where e3 ends: 3 never had it and answers
//	    with its largest epoch below, e0, ending at 12. 2's own e0 ends at
//	    10, so it cuts at min(10, 12) = 10 (KIP-279); cutting at 12, as the
//	    KIP-101 rule did, would keep its e1 records at 10-11, where 3 has
//	    r10,r11 of e0, and the logs would differ forever.
func TestClusterKIP279DivergenceOverSeveralEpochs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Dedicated controllers (1-3), so that losing two of the three
	// brokers (4-6) leaves the metadata quorum whole.
	c := startRolesCluster(t,
		[]string{controllerOnly, controllerOnly, controllerOnly, brokerOnly, brokerOnly, brokerOnly},
		map[string]string{
			"replica.lag.time.max.ms":        "60000",
			"auto.leader.rebalance.enable":   "false",
			"unclean.leader.election.enable": "false",
		}, node.Options{})
	const a, b, x = int32(4), int32(5), int32(6) // the "1, 2, 3" of the comment
	adm := observerClient(t, c.addrs())
	const topic = "kip279"
	createAssignedTopic(ctx, t, newSeededClient(t, c.addrs()), topic, [][]int32{{a, b, x}})
	awaitPartition(ctx, t, adm, topic, 0, "broker 4 leading with a full ISR", func(v partitionView) bool {
		return v.Leader == a && len(v.ISR) == 3
	})
	all := idempotentProducer(t, c.addrs(), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	one := newSeededClient(t, c.addrs(), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	acked := newAckedRecords()
	produce := func(cl *kgo.Client, from, to int) {
		t.Helper()
		for n := from; n < to; n++ {
			r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(strconv.Itoa(n))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("record %d: %v", n, err)
			}
			if cl == all {
				acked.add(n, 0, nil)
			}
		}
	}
	broker := func(id int32) *node.Broker { return c.brokers[id-1] }
	logEnd := func(id int32) int64 {
		bs, err := broker(id).ReplicaBatches(topic, 0)
		if err != nil {
			t.Fatalf("replica on %d: %v", id, err)
		}
		if len(bs) == 0 {
			return 0
		}
		return bs[len(bs)-1].LastOffset + 1
	}
	awaitLogEnd := func(id int32, want int64) {
		t.Helper()
		for logEnd(id) != want {
			select {
			case <-ctx.Done():
				t.Fatalf("replica on %d ends at %d, want %d", id, logEnd(id), want)
			case <-time.After(10 * time.Millisecond): // an internal view, polled
			}
		}
	}
	leaderIs := func(id int32) partitionView {
		t.Helper()
		v := awaitPartition(ctx, t, adm, topic, 0, fmt.Sprintf("broker %d leading", id), func(v partitionView) bool { return v.Leader == id })
		// The acks=1 writes that follow must land on id alone.
		c.awaitDeposed(ctx, topic, 0, id)
		return v
	}

	// e0: committed everywhere, then a tail on 1 and 3 only.
	e0 := leaderIs(a).LeaderEpoch
	produce(all, 0, 10)
	for _, id := range []int32{a, b, x} {
		awaitLogEnd(id, 10)
	}
	broker(b).PauseReplicaFetching()
	produce(one, 10, 12)
	awaitLogEnd(x, 12)
	broker(x).PauseReplicaFetching()

	// e1: 2 leads and writes over offsets 10-12.
	c.kill(int(a) - 1)
	e1 := leaderIs(b).LeaderEpoch
	produce(one, 12, 15)
	awaitLogEnd(b, 13)
	c.start(int(a) - 1)
	awaitPartition(ctx, t, adm, topic, 0, "broker 4 back in the ISR", func(v partitionView) bool { return v.inISR(a) })
	awaitLogEnd(a, 13)

	// e2: 1 leads again while 2 is alive, in the ISR and paused.
	if _, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}}); err != nil {
		t.Fatalf("preferred election: %v", err)
	}
	e2 := leaderIs(a).LeaderEpoch
	produce(one, 15, 17)
	awaitLogEnd(a, 15)

	// e3: 1 dies, 2 (never truncated) leads and writes over 13-14.
	c.kill(int(a) - 1)
	e3 := leaderIs(b).LeaderEpoch
	produce(one, 17, 19)
	awaitLogEnd(b, 15)
	divergent, err := broker(b).ReplicaBatches(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := epochsFrom(divergent, 10), []int32{e1, e3}; !slices.Equal(got, want) {
		t.Fatalf("broker 5's tail holds epochs %v, want %v (e0 %d, e2 %d): the scenario did not happen", got, want, e0, e2)
	}
	if got := epochsFrom(mustBatches(t, broker(x), topic), 10); !slices.Equal(got, []int32{e0}) {
		t.Fatalf("broker 6's tail holds epochs %v, want only e0 %d", got, e0)
	}

	// e4: 3, the last of the ISR, leads; acks=all goes on.
	c.kill(int(b) - 1)
	e4 := leaderIs(x).LeaderEpoch
	broker(x).ResumeReplicaFetching()
	produce(all, 19, 29)
	t.Logf("epochs: e0 %d, e1 %d, e2 %d, e3 %d, e4 %d", e0, e1, e2, e3, e4)

	c.start(int(a) - 1)
	c.start(int(b) - 1)
	// A replica that kept a divergent record never catches up (each fetch
	// finds it diverging again), so the ISR stays short.
	healCtx, healCancel := context.WithTimeout(ctx, 20*time.Second)
	defer healCancel()
	awaitPartition(healCtx, t, adm, topic, 0, "a full ISR again", func(v partitionView) bool { return len(v.ISR) == 3 })
	want := mustBatches(t, broker(x), topic)
	for _, id := range []int32{a, b} {
		awaitLogEnd(id, want[len(want)-1].LastOffset+1)
		if got := mustBatches(t, broker(id), topic); !slices.Equal(got, want) {
			t.Fatalf("broker %d's log differs from the leader's:\n got %v\nwant %v", id, got, want)
		}
	}
	if got := epochsFrom(want, 0); !slices.Equal(got, []int32{e0, e4}) {
		t.Fatalf("the healed log holds epochs %v, want e0 %d and e4 %d", got, e0, e4)
	}

	read := readNumbered(ctx, t, c.addrs(), topic)
	ackedAll, _, _ := acked.snapshot()
	checkAllPresent(t, 0, ackedAll[0], read[0])
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28}; !slices.Equal(read[0], want) {
		t.Fatalf("the healed log holds records %v, want %v", read[0], want)
	}
}

func mustBatches(t *testing.T, b *node.Broker, topic string) []node.BatchInfo {
	t.Helper()
	bs, err := b.ReplicaBatches(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// epochsFrom lists the distinct leader epochs of the batches at or after
// offset, in log order.
func epochsFrom(bs []node.BatchInfo, offset int64) []int32 {
	var out []int32
	for _, b := range bs {
		if b.LastOffset >= offset && (len(out) == 0 || out[len(out)-1] != b.LeaderEpoch) {
			out = append(out, b.LeaderEpoch)
		}
	}
	return out
}
