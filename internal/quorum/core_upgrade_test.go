package quorum

import (
	"errors"
	"testing"
)

// answerUpdates has the leader answer every UpdateRaftVoter voters asked
// for, as the API would, and tells each voter its answer.
func (c *cluster) answerUpdates(leader uint64) {
	c.t.Helper()
	for _, u := range c.updates {
		err := c.cores[leader].UpdateVoter(u.Member, int32(u.Term), SupportedKRaftVersions)
		if err == nil {
			c.cores[RaftID(u.Member.NodeID)].SelfUpdateAnswered(u)
		} else if !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrFencedLeaderEpoch) {
			c.t.Fatalf("UpdateRaftVoter of node %d: %v", u.Member.NodeID, err)
		}
	}
	c.updates = nil
	c.settle()
}

// A static quorum (kraft.version 0) becomes dynamic: its voters send their
// records to the leader, the upgrade writes them into the log, and then
// voters can be removed and added; restarts, still configured with the
// static voters, come back dynamic from the log or a snapshot.
func TestStaticQuorumUpgradesToDynamic(t *testing.T) {
	cfg := smallConfig()
	cfg.UpdateSelf, cfg.SnapshotEntries, cfg.KeepEntries = true, 15, 3
	c := newCluster(t, 3, cfg)
	leader := c.waitLeader(100)
	c.propose(leader, seq("a", 0, 10)...)
	if v := c.cores[leader].KRaftVersion(); v != KRaftVersionStatic {
		t.Fatalf("kraft.version %d", v)
	}
	if err := c.cores[leader].AddVoter(testMember(3)); !errors.Is(err, ErrStaticQuorum) {
		t.Fatalf("AddVoter at kraft.version 0: %v", err)
	}
	c.updates = nil // not answered: the leader knows nobody yet
	if err := c.cores[leader].UpgradeKRaft(false); !errors.Is(err, ErrUpgradeNotReady) {
		t.Fatalf("upgrade before the voters' records: %v", err)
	}
	follower := c.ids[0]
	if follower == leader {
		follower = c.ids[1]
	}
	bad := testMember(follower)
	if err := c.cores[leader].UpdateVoter(bad, -1, VersionRange{1, 1}); !errors.Is(err, ErrInvalidChange) {
		t.Fatalf("a record without kraft.version 0: %v", err)
	}
	if err := c.cores[leader].UpdateVoter(testMember(9), -1, SupportedKRaftVersions); !errors.Is(err, ErrVoterNotFound) {
		t.Fatalf("a record of a non-voter: %v", err)
	}
	// The voters ask again (nobody answered them) and are answered now.
	for range 3 * selfUpdateRetryElections * cfg.ElectionTicks {
		c.tick(1)
		c.answerUpdates(leader)
	}
	c.tick(3 * selfUpdateRetryElections * cfg.ElectionTicks)
	if len(c.updates) > 0 {
		t.Fatalf("answered voters asked again: %+v", c.updates)
	}
	if err := c.cores[leader].UpgradeKRaft(true); err != nil {
		t.Fatalf("validate the upgrade: %v", err)
	}
	c.waitChange(ChangeKRaftUpgrade, NodeID(leader), 5)
	if c.cores[leader].KRaftVersion() != KRaftVersionStatic {
		t.Fatal("validate-only upgraded")
	}
	if err := c.cores[leader].UpgradeKRaft(false); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if r := c.waitChange(ChangeKRaftUpgrade, NodeID(leader), 100); r.Err != nil {
		t.Fatalf("upgrade: %v", r.Err)
	}
	c.tick(3)
	for _, id := range c.ids {
		ms := c.cores[id].Membership()
		if !ms.Dynamic || c.cores[id].KRaftVersion() != KRaftVersionDynamic {
			t.Fatalf("node %d is not dynamic after the upgrade", id)
		}
		for _, v := range ms.Voters {
			if want := testMember(RaftID(v.NodeID)); v.DirectoryID != want.DirectoryID || len(v.Listeners) != 1 || v.Listeners[0] != want.Listeners[0] {
				t.Fatalf("node %d records voter %d as %+v", id, v.NodeID, v)
			}
		}
	}
	c.checkVoters(0, 1, 2)
	c.propose(leader, seq("b", 0, 20)...) // past a snapshot with the membership

	// Now the voters change: one leaves and comes back.
	gone := follower
	if err := c.cores[leader].RemoveVoter(NodeID(gone), testMember(gone).DirectoryID); err != nil {
		t.Fatalf("remove after the upgrade: %v", err)
	}
	c.waitChange(ChangeRemoveVoter, NodeID(gone), 200)
	var rest []int32
	for _, id := range c.ids {
		if id != gone {
			rest = append(rest, NodeID(id))
		}
	}
	c.checkVoters(rest...)
	if err := c.cores[leader].AddVoter(testMember(gone)); err != nil {
		t.Fatalf("add after the upgrade: %v", err)
	}
	if r := c.waitChange(ChangeAddVoter, NodeID(gone), 300); r.Err != nil {
		t.Fatalf("add after the upgrade: %v", r.Err)
	}
	c.checkVoters(0, 1, 2)

	// Every node restarts with its static configuration: still dynamic.
	for _, id := range c.ids {
		c.crash(id)
		c.start(id)
	}
	leader = c.waitLeader(300)
	c.propose(leader, "c")
	c.tick(5)
	for _, id := range c.ids {
		if !c.cores[id].Membership().Dynamic {
			t.Fatalf("node %d came back static", id)
		}
	}
	c.checkVoters(0, 1, 2)
	if err := c.cores[leader].UpgradeKRaft(false); err != nil {
		t.Fatalf("upgrading again: %v", err)
	}
	want := append(append(seq("a", 0, 10), seq("b", 0, 20)...), "c")
	c.checkSameValues(want)
}
