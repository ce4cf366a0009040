package quorum

import (
	"testing"

	"go.etcd.io/raft/v3"
)

// failoverConfig is a quorum whose election timeout never runs out within
// a test: only PeerDown's campaign can replace a leader.
func failoverConfig() CoreConfig {
	return CoreConfig{ElectionTicks: 100_000, HeartbeatTicks: 1}
}

// elect makes id the leader by asking it to campaign.
func (c *cluster) elect(id uint64) {
	c.t.Helper()
	if err := c.cores[id].Campaign(); err != nil {
		c.t.Fatalf("campaign on %d: %v", id, err)
	}
	c.settle()
	if !c.cores[id].IsLeader() {
		c.t.Fatalf("node %d did not win its campaign", id)
	}
	c.tick(1) // every follower has heard a heartbeat
}

// tickOne ticks node id alone, without delivering what it sends, and
// returns its role.
func (c *cluster) tickOne(id uint64) raft.StateType {
	c.cores[id].Tick()
	return c.cores[id].Status().RaftState
}

// wantRoles fails unless each node has the role given.
func (c *cluster) wantRoles(roles map[uint64]raft.StateType) {
	c.t.Helper()
	for id, want := range roles {
		if got := c.cores[id].Status().RaftState; got != want {
			c.t.Fatalf("node %d is %s, want %s", id, got, want)
		}
	}
}

// The leader's process is gone and every survivor hears of it: the one with
// the lowest id among the other voters campaigns at its next tick, the
// others do not, and it wins without waiting out an election timeout.
func TestPeerDownLowestOtherVoterCampaigns(t *testing.T) {
	for _, tt := range []struct {
		name       string
		leader     uint64
		campaigner uint64
	}{
		{"the lowest id died", 1, 2},
		{"another id died", 3, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, 5, failoverConfig())
			c.elect(tt.leader)
			c.propose(tt.leader, "before")
			term := c.cores[tt.leader].Term()
			// A report about a peer that is not the leader changes nothing.
			for _, id := range c.ids {
				if id == tt.leader {
					continue
				}
				other := tt.campaigner
				if id == other {
					other = 5
				}
				if err := c.cores[id].PeerDown(other); err != nil {
					t.Fatal(err)
				}
				if got := c.cores[id].Leader(); got != tt.leader {
					t.Fatalf("node %d follows %d after a follower's death, want %d", id, got, tt.leader)
				}
			}
			c.tick(3)
			if got := c.waitLeader(1); got != tt.leader || c.cores[got].Term() != term {
				t.Fatalf("leader %d term %d after followers' reports, want %d term %d", got, c.cores[got].Term(), tt.leader, term)
			}

			c.crash(tt.leader)
			roles := map[uint64]raft.StateType{}
			for _, id := range c.ids {
				if id == tt.leader {
					continue
				}
				if err := c.cores[id].PeerDown(tt.leader); err != nil {
					t.Fatal(err)
				}
				if got := c.cores[id].Leader(); got != 0 {
					t.Fatalf("node %d still follows %d after its death", id, got)
				}
				roles[id] = raft.StateFollower
			}
			c.wantRoles(roles)
			for id := range roles {
				c.tickOne(id)
			}
			roles[tt.campaigner] = raft.StatePreCandidate
			c.wantRoles(roles)
			c.settle()
			if got := c.waitLeader(1, keys(roles)...); got != tt.campaigner {
				t.Fatalf("node %d leads, want %d", got, tt.campaigner)
			}
			c.propose(tt.campaigner, "after")
			c.checkSameValues3([]string{"before", "after"}, keys(roles)...)
		})
	}
}

func keys(m map[uint64]raft.StateType) []uint64 {
	out := make([]uint64, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	return out
}

// The campaigner's first pre-vote reaches a survivor that has not heard of
// the death yet, which ignores it (its leader's lease lasts); the campaign
// starts again campaignRetryTicks later, and wins once that survivor has
// forgotten the leader too.
func TestPeerDownCampaignRetriesWhileNoLeader(t *testing.T) {
	c := newCluster(t, 3, failoverConfig())
	c.elect(1)
	c.crash(1)
	if err := c.cores[2].PeerDown(1); err != nil {
		t.Fatal(err)
	}
	c.tick(1)
	c.wantRoles(map[uint64]raft.StateType{2: raft.StatePreCandidate, 3: raft.StateFollower})
	if got := c.cores[3].Leader(); got != 1 {
		t.Fatalf("node 3 follows %d, want the dead leader 1 (it has not heard)", got)
	}
	if err := c.cores[3].PeerDown(1); err != nil {
		t.Fatal(err)
	}
	// Node 3 forgot the leader, but it is the campaigner's turn only:
	// nothing happens until the retry, campaignRetryTicks ticks after
	// the first try.
	for i := range campaignRetryTicks - 1 {
		c.tick(1)
		if c.cores[2].IsLeader() || c.cores[3].IsLeader() {
			t.Fatalf("a leader %d ticks after node 3 heard, before the retry", i+1)
		}
	}
	c.tick(1)
	if got := c.waitLeader(1, 2, 3); got != 2 {
		t.Fatalf("node %d leads, want 2", got)
	}
}

// Once a leader is known again the campaign is off: a report about a
// leader that is in fact alive (it answers before the next tick) starts no
// election, now or later.
func TestPeerDownNoCampaignOnceALeaderIsKnown(t *testing.T) {
	c := newCluster(t, 3, failoverConfig())
	c.elect(1)
	term := c.cores[1].Term()
	if err := c.cores[2].PeerDown(1); err != nil {
		t.Fatal(err)
	}
	if got := c.cores[2].Leader(); got != 0 {
		t.Fatalf("node 2 still follows %d", got)
	}
	c.cores[1].Tick() // a heartbeat
	c.settle()
	if got := c.cores[2].Leader(); got != 1 {
		t.Fatalf("node 2 follows %d after the leader's heartbeat, want 1", got)
	}
	for range 3 * campaignRetryTicks {
		if role := c.tickOne(2); role != raft.StateFollower {
			t.Fatalf("node 2 is %s with a known leader", role)
		}
	}
	c.settle()
	c.tick(3 * campaignRetryTicks)
	if got := c.waitLeader(1); got != 1 || c.cores[1].Term() != term {
		t.Fatalf("leader %d term %d, want 1 term %d", got, c.cores[got].Term(), term)
	}

	// The same once the campaign has started: a leader elected meanwhile
	// (here by another survivor) ends it.
	c.crash(1)
	if err := c.cores[2].PeerDown(1); err != nil {
		t.Fatal(err)
	}
	if role := c.tickOne(2); role != raft.StatePreCandidate {
		t.Fatalf("node 2 is %s after the leader's death", role)
	}
	if _, err := c.cores[2].Ready(); err != nil { // its pre-votes are lost
		t.Fatal(err)
	}
	if err := c.cores[3].PeerDown(1); err != nil {
		t.Fatal(err)
	}
	c.elect(3)
	for range 3 * campaignRetryTicks {
		if role := c.tickOne(2); role != raft.StateFollower {
			t.Fatalf("node 2 is %s under leader 3", role)
		}
	}
}

// Only a voter campaigns: a learner (a voter the operator removed, which
// Kafka shows as an observer) is never the lowest voter, even with the
// lowest id, so the lowest voter left campaigns and wins.
func TestPeerDownLearnerDoesNotCampaign(t *testing.T) {
	c := newDynamicCluster(t, 4, failoverConfig())
	c.elect(1)
	c.tick(2) // the founder records itself in the log
	for _, id := range []uint64{2, 3, 4} {
		if err := c.cores[1].AddVoter(testMember(id)); err != nil {
			t.Fatalf("add %d: %v", id, err)
		}
		if r := c.waitChange(ChangeAddVoter, NodeID(id), 200); r.Err != nil {
			t.Fatalf("add %d: %v", id, r.Err)
		}
	}
	if err := c.cores[1].RemoveVoter(NodeID(2), testMember(2).DirectoryID); err != nil {
		t.Fatalf("remove 2: %v", err)
	}
	if r := c.waitChange(ChangeRemoveVoter, NodeID(2), 200); r.Err != nil {
		t.Fatalf("remove 2: %v", r.Err)
	}
	c.checkVoters(0, 2, 3)
	c.tick(1)
	if got := c.cores[2].Leader(); got != 1 {
		t.Fatalf("the learner follows %d, want 1", got)
	}

	c.crash(1)
	for _, id := range []uint64{2, 3, 4} {
		if err := c.cores[id].PeerDown(1); err != nil {
			t.Fatal(err)
		}
		c.tickOne(id)
	}
	c.wantRoles(map[uint64]raft.StateType{2: raft.StateFollower, 3: raft.StatePreCandidate, 4: raft.StateFollower})
	c.settle()
	if got := c.waitLeader(1, 2, 3, 4); got != 3 {
		t.Fatalf("node %d leads, want 3 (the lowest voter left)", got)
	}
	for range 3 * campaignRetryTicks {
		if role := c.tickOne(2); role != raft.StateFollower {
			t.Fatalf("the learner is %s", role)
		}
	}
}
