package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterLeaderCrashLosesNothingAcknowledged: RF=3,
// min.insync.replicas=2, an idempotent acks=all producer; the partition
// leader crashes mid-stream; every acknowledged record is read back
// exactly once and in order.
func TestClusterLeaderCrashLosesNothingAcknowledged(t *testing.T) {
	c := startCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.client())
	min2 := "2"
	resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &min2}, "failover")
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	leader := c.leaderOf(ctx, "failover", 0)
	t.Logf("leader of failover-0 is broker %d", leader)

	producer := c.client(kgo.DefaultProduceTopic("failover"), kgo.RecordRetries(1000), kgo.RequestRetries(1000))
	var (
		mu    sync.Mutex
		acked []int
	)
	const total = 3000
	killAt := total / 3
	var wg sync.WaitGroup
	for i := 0; i < total; i++ {
		if i == killAt {
			// Wait for some acknowledgements, then crash the leader.
			if err := producer.Flush(ctx); err != nil {
				t.Fatalf("flush: %v", err)
			}
			c.kill(int(leader) - 1)
			t.Logf("killed broker %d after %d sends", leader, i)
		}
		wg.Add(1)
		v := i
		producer.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprint(v))}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err == nil {
				mu.Lock()
				acked = append(acked, v)
				mu.Unlock()
			}
		})
	}
	if err := producer.Flush(ctx); err != nil {
		t.Fatalf("final flush: %v", err)
	}
	wg.Wait()
	newLeader := c.leaderOf(ctx, "failover", 0)
	if newLeader == leader {
		t.Fatalf("leader is still the killed broker %d", leader)
	}
	t.Logf("new leader %d; %d of %d acknowledged", newLeader, len(acked), total)

	consumer := c.client(kgo.ConsumeTopics("failover"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]int{}
	var order []string
	for len(seen) < len(acked) {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d acknowledged records", len(seen), len(acked))
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			order = append(order, string(r.Value))
		})
	}
	for _, v := range acked {
		if seen[fmt.Sprint(v)] != 1 {
			t.Fatalf("acknowledged record %d read %d times", v, seen[fmt.Sprint(v)])
		}
	}
	for v, n := range seen {
		if n != 1 {
			t.Fatalf("record %s read %d times", v, n)
		}
	}
	prev := -1
	for _, s := range order {
		var v int
		fmt.Sscan(s, &v)
		if v <= prev {
			t.Fatalf("record %d read after %d: out of order", v, prev)
		}
		prev = v
	}
}
