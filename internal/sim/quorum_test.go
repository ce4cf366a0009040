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
				c, old := quorumLeaderAfter3s(t, seed)
				leader := func() *process { return quorumLeader(c) }
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

// A quorum leader stopped cleanly (node.stop, FaultMix.Stop) hands its
// leadership over (Core.Resign, as quorum's TestStoppedLeaderHandsOver
// checks on real TCP): its successor is elected within a tick, with no
// follower told of a death (its port stays open until it exits), and the
// old leader exits once it knows its successor.
func TestStoppedQuorumLeaderReplaced(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		c, old := quorumLeaderAfter3s(t, seed)
		leader := func() *process { return quorumLeader(c) }
		stopped, term := old.n, old.core.Term()
		exited := false
		stopped.stop(func() { exited = true })
		began := c.s.now
		elected := func() bool { p := leader(); return p != nil && p.core.Term() > term }
		c.s.runUntil(began+3*time.Second, func() bool { return elected() && exited })
		if !elected() || !exited {
			t.Fatalf("seed %d: 3 s after %s began to stop: new leader %v, exited %v", seed, stopped, elected(), exited)
		}
		took, next := c.s.now-began, leader()
		t.Logf("seed %d: %s (term %d) handed over to %s (term %d), exited after %v", seed, stopped, term, next.n, next.core.Term(), took)
		if took > raftTick || next.core.Term() != term+1 {
			t.Fatalf("seed %d: %s replaced by %s in term %d after %v, want term %d within %v", seed, stopped, next.n, next.core.Term(), took, term+1, raftTick)
		}
		if st := c.check.stats; st.Handovers != 1 || st.DeadLeadersForgotten != 0 {
			t.Fatalf("seed %d: %d handovers, %d dead leaders forgotten; want 1 and 0", seed, st.Handovers, st.DeadLeadersForgotten)
		}
		if stopped.up {
			t.Fatalf("seed %d: %s still up after its stop", seed, stopped)
		}
	}
}

// quorumLeaderAfter3s starts five nodes with seed and runs them for 3 s:
// the quorum has a leader by then.
func quorumLeaderAfter3s(t *testing.T, seed uint64) (*Cluster, *process) {
	t.Helper()
	cryptotest.SetGlobalRandom(t, seed)
	c := newCluster(Options{Seed: seed, Nodes: 5, Partitions: 1, ReplicationFactor: 3, MinISR: 2, Duration: 5 * time.Second,
		Net: netConfig{MinDelay: 100 * time.Microsecond, MaxDelay: 2 * time.Millisecond}})
	for _, id := range c.ids {
		if err := c.nodes[id].start(); err != nil {
			t.Fatal(err)
		}
	}
	c.s.runUntil(3*time.Second, func() bool { return false })
	old := quorumLeader(c)
	if old == nil {
		t.Fatalf("seed %d: no quorum leader after 3 s", seed)
	}
	return c, old
}

// quorumLeader is the leader with the newest term, nil if none.
func quorumLeader(c *Cluster) *process {
	return c.newestWhere(func(p *process) bool { return p.core.IsLeader() })
}
