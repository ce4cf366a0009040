package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/testcluster"
)

// TestBalancerGivesJoinedBrokerLoad: three brokers hold a topic of six
// partitions with two replicas each; a fourth broker joins a cluster whose
// controllers run the automatic balancer, and the balancer moves replicas
// onto it (at most two reassignments at once) until every broker holds
// three, while an idempotent acks=all franz-go producer writes. Every
// acknowledged record is read back.
func TestBalancerGivesJoinedBrokerLoad(t *testing.T) {
	roles := []string{testcluster.Combined, testcluster.Combined, testcluster.Combined, testcluster.BrokerOnly}
	c := newRolesCluster(t, roles, map[string]string{
		"auto.replica.balance.enable":          "true",
		"replica.balance.check.interval.ms":    "1000",
		"replica.balance.max.concurrent.moves": "2",
		// The brokers share this machine's filesystem, whose usage (other
		// tests, other work) is not theirs to judge.
		"replica.balance.max.disk.usage.percent": "100",
	}, node.Options{})
	for i := range 3 {
		c.start(i)
	}
	c.waitRegistered()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := observerClient(t, c.addrs()[:3])
	const topic = "growing"
	createReplicatedTopic(ctx, t, adm, topic, 6, 2, nil)

	producer := idempotentProducer(t, c.addrs()[:3])
	acks := newAckedRecords()
	st := startStream(ctx, producer, topic, spreadOver(6), 0, openEnded, acks)
	awaitProgress(ctx, t, acks, 200)

	c.start(3)
	c.waitRegistered()
	awaitAdmin(ctx, t, "every broker holds 3 replicas, none moving", func() (bool, any) {
		load, err := replicasByBroker(ctx, adm, topic)
		if err != nil {
			return false, err
		}
		list, err := adm.ListPartitionReassignments(ctx, nil)
		if err != nil {
			return false, err
		}
		if len(list) > 2 {
			t.Errorf("%d reassignments at once, max.concurrent.moves is 2", len(list))
		}
		return len(list) == 0 && load[1] == 3 && load[2] == 3 && load[3] == 3 && load[4] == 3, load
	})
	awaitProgress(ctx, t, acks, 200) // writes go on after the moves
	total := st.stopAndWait(t)
	if _, n, errs := acks.snapshot(); n != total {
		t.Fatalf("%d of %d acknowledged; errors %v", n, total, errs)
	}
	if got := checkAckedRecords(ctx, t, c.addrs(), topic, acks); got != total {
		t.Fatalf("read %d records, want %d", got, total)
	}
}

// replicasByBroker counts the replicas of topic's partitions on each broker,
// as Metadata lists them (a reassignment's adding and removing replicas
// among them).
func replicasByBroker(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int, error) {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil, err
	}
	load := map[int32]int{}
	for _, p := range md.Topics[topic].Partitions {
		for _, r := range p.Replicas {
			load[r]++
		}
	}
	return load, nil
}
