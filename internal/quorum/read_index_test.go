package quorum

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestNodeReadIndex: ReadIndex on any voter returns an index at least the
// leader's applied index when the call began, so a follower that applies
// up to it holds every entry the leader had committed then. Without a
// leader to confirm it, the call fails with ErrReadIndexLost instead of
// hanging.
func TestNodeReadIndex(t *testing.T) {
	c := newTCPCluster(t, testClusterID, testClusterID, testClusterID)
	all := []int32{0, 1, 2}
	for i := range 5 {
		c.propose(fmt.Sprintf("r%d", i), all...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	for round := range 3 {
		leader := c.waitLeader(all...)
		c.propose(fmt.Sprintf("s%d", round), all...)
		before := c.nodes[leader].node.Applied()
		for _, id := range all {
			idx, err := c.nodes[id].node.ReadIndex(ctx)
			if errors.Is(err, ErrReadIndexLost) {
				// The leadership moved under the read (a loaded machine).
				t.Logf("node %d: read index lost during a leadership change", id)
				continue
			}
			if err != nil {
				t.Fatalf("node %d ReadIndex: %v", id, err)
			}
			if idx < before {
				t.Fatalf("node %d ReadIndex = %d, below the leader's applied %d when the call began", id, idx, before)
			}
		}
	}

	// Two of three stop: nobody can confirm a leadership.
	leader := c.waitLeader(all...)
	var survivor int32 = -1
	for _, id := range all {
		if id != leader && survivor < 0 {
			survivor = id
			continue
		}
		c.stop(id)
	}
	if _, err := c.nodes[survivor].node.ReadIndex(ctx); !errors.Is(err, ErrReadIndexLost) {
		t.Fatalf("ReadIndex without a quorum: %v, want ErrReadIndexLost", err)
	}
}
