package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestClusterPreferredLeaderElection: after the preferred leader (first
// replica) crashed, came back and caught up, ElectLeaders gives it its
// leadership back; asking again answers ELECTION_NOT_NEEDED.
func TestClusterPreferredLeaderElection(t *testing.T) {
	c := startCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	adm := observerClient(t, c.addrs())
	createReplicatedTopic(ctx, t, adm, "preferred", 1, 3, nil)
	preferred := replicasOf(ctx, t, adm, "preferred", 0)[0]
	awaitPartition(ctx, t, adm, "preferred", 0, "the preferred leader", func(v partitionView) bool { return v.Leader == preferred })

	c.kill(int(preferred) - 1)
	awaitPartition(ctx, t, adm, "preferred", 0, "another leader", func(v partitionView) bool { return v.Leader >= 0 && v.Leader != preferred })
	c.start(int(preferred) - 1)
	awaitPartition(ctx, t, adm, "preferred", 0, "a full ISR", func(v partitionView) bool { return len(v.ISR) == 3 })

	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"preferred": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res["preferred"][0]; r.Err != nil {
		t.Fatalf("preferred election: %v", r.Err)
	}
	awaitPartition(ctx, t, adm, "preferred", 0, "the preferred leader back", func(v partitionView) bool { return v.Leader == preferred })

	res, err = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"preferred": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res["preferred"][0]; r.Err != kerr.ElectionNotNeeded {
		t.Fatalf("second election: %v, want ELECTION_NOT_NEEDED", r.Err)
	}
}
