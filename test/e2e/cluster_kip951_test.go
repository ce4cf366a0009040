package e2e

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterNotLeaderCarriesNewLeader: a Produce (v10+) sent to a broker
// that does not lead the partition, a follower or a broker with no replica
// of it, is refused with NOT_LEADER_OR_FOLLOWER carrying the leader
// (KIP-951): CurrentLeader with its id and epoch, and its endpoint in the
// response's Brokers, so a client redirects without a Metadata round trip.
func TestClusterNotLeaderCarriesNewLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := startCluster(t, 3, nil)
	haltAllAtEnd(t, c)
	adm := observerClient(t, c.addrs())
	const topic = "kip-951"
	createReplicatedTopic(ctx, t, adm, topic, 1, 2, nil)
	view := awaitPartition(ctx, t, adm, topic, 0, "a leader", func(v partitionView) bool { return v.Leader >= 0 })
	replicas := replicasOf(ctx, t, adm, topic, 0)
	follower := slices.DeleteFunc(slices.Clone(replicas), func(id int32) bool { return id == view.Leader })[0]
	outsider := otherBrokers(3, replicas...)[0]

	for _, target := range []struct {
		name string
		id   int32
	}{{"follower", follower}, {"broker without a replica", outsider}} {
		for _, version := range []int16{10, 11, 12} {
			t.Run(fmt.Sprintf("%s/v%d", target.name, version), func(t *testing.T) {
				checkLeaderHint(ctx, t, c, target.id, version, topic, view)
			})
		}
	}

	// After a failover the hint names the new leader and its new epoch.
	c.kill(int(view.Leader) - 1)
	after := awaitPartition(ctx, t, adm, topic, 0, "the follower leading", func(v partitionView) bool { return v.Leader == follower })
	if after.LeaderEpoch <= view.LeaderEpoch {
		t.Fatalf("leader epoch %d after failover, was %d", after.LeaderEpoch, view.LeaderEpoch)
	}
	t.Run("after failover", func(t *testing.T) {
		// Each broker applies the new metadata on its own; wait until
		// the outsider has (a polled external view, bounded by ctx).
		for {
			part, _, err := rawProduce(ctx, c.addrs()[outsider-1], 12, 1, topic, 0, "misdirected")
			if err == nil && part.CurrentLeader.LeaderEpoch >= after.LeaderEpoch {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("broker %d never learnt the new leader epoch %d", outsider, after.LeaderEpoch)
			case <-time.After(50 * time.Millisecond):
			}
		}
		checkLeaderHint(ctx, t, c, outsider, 12, topic, after)
	})
}

// checkLeaderHint sends a Produce to a broker that does not lead the
// partition and checks the KIP-951 fields of the refusal.
func checkLeaderHint(ctx context.Context, t *testing.T, c *testCluster, to int32, version int16, topic string, want partitionView) {
	t.Helper()
	var part kmsg.ProduceResponseTopicPartition
	var brokers []kmsg.ProduceResponseBroker
	for {
		var err error
		part, brokers, err = rawProduce(ctx, c.addrs()[to-1], version, 1, topic, 0, "misdirected")
		if err != nil {
			t.Fatalf("produce to broker %d: %v", to, err)
		}
		// Each broker applies metadata on its own: one that has not yet
		// learnt of the topic rightly says UNKNOWN_TOPIC_OR_PARTITION.
		if kerr.ErrorForCode(part.ErrorCode) != kerr.UnknownTopicOrPartition {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("broker %d never learnt of %s", to, topic)
		case <-time.After(externalPollInterval):
		}
	}
	if got := kerr.ErrorForCode(part.ErrorCode); got != kerr.NotLeaderForPartition {
		t.Fatalf("error %v, want NOT_LEADER_OR_FOLLOWER", got)
	}
	if part.CurrentLeader.LeaderID != want.Leader || part.CurrentLeader.LeaderEpoch != want.LeaderEpoch {
		t.Fatalf("CurrentLeader %+v, want leader %d epoch %d", part.CurrentLeader, want.Leader, want.LeaderEpoch)
	}
	host, port, err := net.SplitHostPort(c.addrs()[want.Leader-1])
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(brokers, func(b kmsg.ProduceResponseBroker) bool { return b.NodeID == want.Leader })
	if i < 0 {
		t.Fatalf("Brokers %+v lack leader %d", brokers, want.Leader)
	}
	if brokers[i].Host != host || strconv.Itoa(int(brokers[i].Port)) != port {
		t.Fatalf("leader endpoint %s:%d, want %s:%s", brokers[i].Host, brokers[i].Port, host, port)
	}
}
