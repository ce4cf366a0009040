package e2e

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterNotEnoughReplicas: RF=3, min.insync.replicas=2. With two of
// the three replicas down (on five brokers, so the metadata quorum still
// has a majority and can shrink the ISR: on three, two dead nodes leave
// no controller, the ISR cannot change, and acks=all just times out), an acks=all produce fails with
// NOT_ENOUGH_REPLICAS and nothing is acknowledged or written; once one
// replica is back in the ISR the same producer goes on, and every
// acknowledged record is read back exactly once, in order.
func TestClusterNotEnoughReplicas(t *testing.T) {
	for _, tc := range []struct {
		name       string
		killLeader bool // kill the leader and a follower, else both followers
	}{
		{name: "two followers down"},
		{name: "leader and a follower down", killLeader: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			c := startCluster(t, 5, nil)
			haltAllAtEnd(t, c)
			const topic = "min-isr"
			adm := observerClient(t, c.addrs())
			createReplicatedTopic(ctx, t, adm, topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
			leader := c.leaderOf(ctx, topic, 0)

			// Few retries, so a record that cannot be replicated fails back
			// to the application instead of waiting forever; and quick
			// metadata refreshes (franz-go refreshes before each retry).
			producer := c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.RecordRetries(3), kgo.RecordDeliveryTimeout(3*time.Second),
				kgo.MetadataMinAge(50*time.Millisecond),
				kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
			acks := newAckedRecords()
			produceRange(ctx, t, producer, acks, 0, 50)
			if _, n, errs := acks.snapshot(); n != 50 {
				t.Fatalf("before the outage: %d of 50 acknowledged: %v", n, errs)
			}

			// Which replicas die, and which one survives.
			replicas := replicasOf(ctx, t, adm, topic, 0)
			followers := slices.DeleteFunc(replicas, func(id int32) bool { return id == leader })
			victims, survivor := followers, leader
			if tc.killLeader {
				victims, survivor = []int32{leader, followers[0]}, followers[1]
			}
			for _, id := range victims {
				c.kill(int(id) - 1)
			}
			t.Logf("leader %d; killed %v; %d survives", leader, victims, survivor)
			awaitPartition(ctx, t, adm, topic, 0, "only the survivor in the ISR", func(v partitionView) bool {
				return v.Leader == survivor && slices.Equal(v.ISR, []int32{survivor})
			})
			// The refusal below is the survivor's own decision: wait until its
			// leader state, not only the metadata, has the ISR of one.
			awaitLeaderISR(ctx, t, c, survivor, topic, 0, 1)

			// On the wire: the leader refuses before appending. (franz-go
			// retries NOT_ENOUGH_REPLICAS, and when its delivery timeout
			// ends the retries it reports only the timeout, so the code is
			// checked on a raw request.)
			survivorAddr := c.addrs()[survivor-1]
			part, _, err := rawProduce(ctx, survivorAddr, 9, -1, topic, 0, "refused")
			if err != nil {
				t.Fatalf("raw produce: %v", err)
			}
			if got := kerr.ErrorForCode(part.ErrorCode); got != kerr.NotEnoughReplicas {
				t.Fatalf("acks=all produce with one of three replicas: %v, want NOT_ENOUGH_REPLICAS", got)
			}

			produceRange(ctx, t, producer, acks, 50, 60)
			_, n, errs := acks.snapshot()
			if n != 50 || acks.failures() != 10 {
				t.Fatalf("with one of three replicas: %d acknowledged, %d failed; want 0 and 10", n-50, acks.failures())
			}
			t.Logf("outage: %d records failed, first: %v", acks.failures(), errs[0])

			back := victims[0]
			c.start(int(back) - 1)
			c.waitRegistered()
			awaitPartition(ctx, t, adm, topic, 0, "two replicas in the ISR", func(v partitionView) bool {
				return len(v.ISR) == 2 && v.inISR(back)
			})
			t.Logf("broker %d is back in the ISR", back)
			produceRange(ctx, t, producer, acks, 60, 110)
			if _, n, errs := acks.snapshot(); n != 100 {
				t.Fatalf("after broker %d came back: %d of 50 acknowledged: %v", back, n-50, errs)
			}

			got := checkAckedRecords(ctx, t, c.addrs(), topic, acks)
			if got != 100 {
				t.Fatalf("read %d records, want exactly the 100 acknowledged (a NOT_ENOUGH_REPLICAS record must not be written)", got)
			}
		})
	}
}

// produceRange produces the numbered records [from, to) and waits until
// each is acknowledged or failed.
func produceRange(ctx context.Context, t testing.TB, producer *kgo.Client, acks *ackedRecords, from, to int) {
	t.Helper()
	for n := from; n < to; n++ {
		producer.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(n))}, acks.record(n))
	}
	if err := producer.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
}
