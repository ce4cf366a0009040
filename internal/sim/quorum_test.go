package sim

import (
	"testing"
	"testing/cryptotest"
	"time"
)

// The quorum leader's death as the simulated Raft transport signals it
// (node_quorum_conn.go) and Core.PeerDown decides on it, as quorum's
// TestDeadLeaderReplacedAtOnce checks on real TCP: a killed process is
// replaced by the lowest voter left within a few ticks, well before any
// follower's election timeout (electionTicks, at least 450 ms after the
// kill: the last heartbeat is at most a tick old); a machine that lost
// power signals nothing, so it is replaced only by the election timeout.
func TestDeadQuorumLeaderReplaced(t *testing.T) {
	const fast = 4 * raftTick
	for _, tt := range []struct {
		name      string
		powerLoss bool
	}{{"kill -9", false}, {"power loss", true}} {
		t.Run(tt.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 10; seed++ {
				cryptotest.SetGlobalRandom(t, seed)
				c := newCluster(Options{Seed: seed, Nodes: 5, Partitions: 1, ReplicationFactor: 3, MinISR: 2, Duration: 5 * time.Second,
					Net: netConfig{MinDelay: 100 * time.Microsecond, MaxDelay: 2 * time.Millisecond}})
				for _, id := range c.ids {
					if err := c.nodes[id].start(); err != nil {
						t.Fatal(err)
					}
				}
				leader := func() *process { return c.newestWhere(func(p *process) bool { return p.core.IsLeader() }) }
				c.s.runUntil(3*time.Second, func() bool { return false })
				old := leader()
				if old == nil {
					t.Fatalf("seed %d: no quorum leader after 3 s", seed)
				}
				dead, term := old.n, old.core.Term()
				if tt.powerLoss {
					dead.crash(false)
				} else {
					dead.exit()
				}
				killed := c.s.now
				elected := func() bool { p := leader(); return p != nil && p.core.Term() > term }
				c.s.runUntil(killed+3*time.Second, elected)
				if !elected() {
					t.Fatalf("seed %d: no leader 3 s after the leader %s died", seed, dead)
				}
				took, next := c.s.now-killed, leader().n
				t.Logf("seed %d: %s (term %d) replaced by %s after %v", seed, dead, term, next, took)
				if tt.powerLoss {
					if took < 9*electionTicks*raftTick/10 {
						t.Fatalf("seed %d: %s replaced %v after a power loss: no signal should have come before the election timeout", seed, dead, took)
					}
					continue
				}
				lowest := c.ids[0]
				if lowest == dead.id {
					lowest = c.ids[1]
				}
				if took > fast || next.id != lowest {
					t.Fatalf("seed %d: %s replaced by %s after %v, want n%d within %v", seed, dead, next, took, lowest, fast)
				}
			}
		})
	}
}
