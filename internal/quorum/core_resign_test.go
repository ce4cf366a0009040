package quorum

import "testing"

// A resigning leader hands over to the voter that holds the most of the
// log, the lowest id among equals, never to one reported gone; the
// successor is elected at once, without anyone's election timeout (here
// 100,000 ticks), and the old leader's handover is over as soon as it
// hears from it.
func TestResignHandsOverToBestCaughtUpVoter(t *testing.T) {
	c := newCluster(t, 5, failoverConfig())
	c.elect(1)
	c.propose(1, "a")
	// Node 2 misses "b": its match index lags the others'.
	c.isolate(2)
	c.propose(1, "b")
	c.heal()
	// The leader heard that node 3's process is gone.
	if err := c.cores[1].PeerDown(3); err != nil {
		t.Fatal(err)
	}
	if !c.cores[1].Resigned() {
		t.Fatal("Resigned is false before Resign")
	}
	term := c.cores[1].Term()
	if got := c.cores[1].successor([]uint64{4}); got != 5 {
		t.Fatalf("successor with node 4 stopping is %d, want 5", got)
	}
	if got := c.cores[1].successor([]uint64{4, 5}); got != 2 {
		t.Fatalf("successor with nodes 4 and 5 stopping is %d, want 2 (behind, but the only one left)", got)
	}
	if got := c.cores[1].Resign(); got != 4 {
		t.Fatalf("Resign chose %d, want 4 (caught up, not gone, lowest id)", got)
	}
	if got := c.cores[1].Resign(); got != 4 {
		t.Fatalf("a second Resign chose %d, want the same 4", got)
	}
	if c.cores[1].Resigned() {
		t.Fatal("Resigned before anyone else leads")
	}
	c.settle() // no tick: MsgTimeoutNow, the vote, the new leader's append
	if !c.cores[4].IsLeader() || c.cores[4].Term() != term+1 {
		t.Fatalf("node 4 is %s in term %d, want leader in term %d", c.cores[4].Status().RaftState, c.cores[4].Term(), term+1)
	}
	for _, id := range c.ids {
		if got := c.cores[id].Leader(); got != 4 {
			t.Fatalf("node %d follows %d, want 4", id, got)
		}
	}
	if !c.cores[1].Resigned() {
		t.Fatal("handover not over once the successor leads")
	}
	c.propose(4, "c")
	c.checkSameValues([]string{"a", "b", "c"})
}

// A node that does not lead has nothing to hand over.
func TestResignNotLeader(t *testing.T) {
	c := newCluster(t, 3, failoverConfig())
	c.elect(1)
	if got := c.cores[2].Resign(); got != 0 {
		t.Fatalf("a follower's Resign chose %d", got)
	}
	if !c.cores[2].Resigned() {
		t.Fatal("a follower's Resigned is false")
	}
	// Nor does one whose every other voter is stopping too.
	if got := c.cores[1].Resign(2, 3); got != 0 || !c.cores[1].Resigned() {
		t.Fatalf("Resign chose %d with every other voter stopping (resigned %v)", got, c.cores[1].Resigned())
	}
	// A leader whose every other voter is gone has no successor.
	for _, id := range []uint64{2, 3} {
		if err := c.cores[1].PeerDown(id); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.cores[1].Resign(); got != 0 || !c.cores[1].Resigned() {
		t.Fatalf("Resign chose %d with every other voter gone (resigned %v)", got, c.cores[1].Resigned())
	}
	// A report proven wrong: the voters answer the next heartbeat, and
	// count again.
	c.tick(1)
	if got := c.cores[1].Resign(); got != 2 {
		t.Fatalf("Resign chose %d once the voters answered, want 2", got)
	}
}

// A successor that cannot be reached: Raft gives the transfer up after an
// election timeout, the leader still leads, and the handover is over (the
// caller stops anyway).
func TestResignGivesUpOnUnreachableSuccessor(t *testing.T) {
	cfg := failoverConfig()
	cfg.ElectionTicks = 10
	c := newCluster(t, 3, cfg)
	c.elect(1)
	c.propose(1, "a")
	c.isolate(2)
	if err := c.cores[1].Propose([]byte("b")); err != nil {
		t.Fatal(err)
	}
	c.settle() // node 3 has "b", node 2 does not
	c.heal()
	if got := c.cores[1].Resign(); got != 3 {
		t.Fatalf("Resign chose %d, want 3", got)
	}
	c.isolate(3)
	ticks := 0
	for ; !c.cores[1].Resigned(); ticks++ {
		if ticks > cfg.ElectionTicks {
			t.Fatalf("handover not over %d ticks after Resign", ticks)
		}
		c.tick(1)
	}
	if !c.cores[1].IsLeader() {
		t.Fatalf("node 1 is %s after the transfer was given up", c.cores[1].Status().RaftState)
	}
	if ticks < cfg.ElectionTicks-1 {
		t.Fatalf("handover over after %d ticks, before an election timeout", ticks)
	}
}

// The successor's process is reported gone during the handover: the
// leader hands over to the next one at once, and when none is left the
// handover is over (the caller stops without waiting out the timeout).
func TestResignSuccessorGone(t *testing.T) {
	c := newCluster(t, 3, failoverConfig())
	c.elect(1)
	c.propose(1, "a")
	term := c.cores[1].Term()
	if got := c.cores[1].Resign(); got != 2 {
		t.Fatalf("Resign chose %d, want 2", got)
	}
	c.crash(2) // before its MsgTimeoutNow arrives
	if _, err := c.cores[1].Ready(); err != nil {
		t.Fatal(err) // the MsgTimeoutNow to 2, lost
	}
	if err := c.cores[1].PeerDown(2); err != nil {
		t.Fatal(err)
	}
	if c.cores[1].Resigned() {
		t.Fatal("handover over with node 3 left to take over")
	}
	c.settle()
	if !c.cores[3].IsLeader() || c.cores[3].Term() != term+1 || c.cores[1].Leader() != 3 {
		t.Fatalf("node 3 is %s in term %d, node 1 follows %d; want 3 leading in term %d", c.cores[3].Status().RaftState, c.cores[3].Term(), c.cores[1].Leader(), term+1)
	}
	if !c.cores[1].Resigned() {
		t.Fatal("handover not over once node 3 leads")
	}

	// Node 3 (told of node 2's death too) resigns to node 1, which is
	// then reported gone: nobody left.
	if err := c.cores[3].PeerDown(2); err != nil {
		t.Fatal(err)
	}
	if got := c.cores[3].Resign(); got != 1 {
		t.Fatalf("node 3's Resign chose %d, want 1", got)
	}
	if err := c.cores[3].PeerDown(1); err != nil {
		t.Fatal(err)
	}
	if !c.cores[3].Resigned() {
		t.Fatal("handover not over with no voter left to take over")
	}
}
