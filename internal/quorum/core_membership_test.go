package quorum

import (
	"errors"
	"slices"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

// voterIDs is a membership's voter node ids.
func voterIDs(m Membership) []int32 {
	var out []int32
	for _, v := range m.Voters {
		out = append(out, v.NodeID)
	}
	return out
}

// waitChange ticks until a leader reports the result of a change of node.
func (c *cluster) waitChange(kind ChangeKind, node int32, maxTicks int) ChangeResult {
	c.t.Helper()
	for range maxTicks {
		for i, r := range c.changes {
			if r.Kind == kind && r.NodeID == node {
				c.changes = slices.Delete(c.changes, i, i+1)
				return r
			}
		}
		c.tick(1)
	}
	c.t.Fatalf("no result for %s of node %d after %d ticks", kind, node, maxTicks)
	return ChangeResult{}
}

// checkVoters fails unless every live member agrees on the voters.
func (c *cluster) checkVoters(want ...int32) {
	c.t.Helper()
	for _, id := range c.ids {
		core := c.cores[id]
		if core == nil || !core.isMember(id) {
			continue
		}
		if got := voterIDs(core.Membership()); !slices.Equal(got, want) {
			c.t.Fatalf("node %d has voters %v, want %v", id, got, want)
		}
	}
}

func TestDynamicQuorumGrowsAndShrinks(t *testing.T) {
	c := newDynamicCluster(t, 4, smallConfig())
	leader := c.waitLeader(100, 1)
	if leader != 1 {
		t.Fatalf("leader %d, want the founder", leader)
	}
	c.propose(1, seq("a", 0, 10)...)
	c.tick(2) // the founder records itself in the log

	// A static-looking request on a follower or a second change at once is
	// refused with the error Kafka's codes map from.
	if err := c.cores[2].AddVoter(testMember(2)); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("add on a non-member: %v", err)
	}
	for _, id := range []uint64{2, 3} {
		if err := c.cores[1].AddVoter(testMember(id)); err != nil {
			t.Fatalf("add %d: %v", id, err)
		}
		if err := c.cores[1].AddVoter(testMember(4)); !errors.Is(err, ErrChangePending) {
			t.Fatalf("second change at once: %v", err)
		}
		if r := c.waitChange(ChangeAddVoter, NodeID(id), 200); r.Err != nil {
			t.Fatalf("add %d: %v", id, r.Err)
		}
	}
	c.checkVoters(0, 1, 2)
	if err := c.cores[1].AddVoter(testMember(2)); !errors.Is(err, ErrDuplicateVoter) {
		t.Fatalf("adding a voter twice: %v", err)
	}
	c.propose(1, seq("b", 0, 10)...)
	want := append(seq("a", 0, 10), seq("b", 0, 10)...)
	c.checkSameValues3(want, 1, 2, 3)

	// Removing the leader itself: the change commits, then it hands over.
	if err := c.cores[1].RemoveVoter(0, [16]byte{9}); !errors.Is(err, ErrVoterNotFound) {
		t.Fatalf("remove with the wrong directory id: %v", err)
	}
	if err := c.cores[1].RemoveVoter(0, testMember(1).DirectoryID); err != nil {
		t.Fatalf("remove the leader: %v", err)
	}
	if r := c.waitChange(ChangeRemoveVoter, 0, 200); r.Err != nil {
		t.Fatalf("remove 1: %v", r.Err)
	}
	next := c.waitLeader(200, 2, 3)
	c.tick(30)
	if c.cores[1].IsLeader() {
		t.Fatal("the removed leader still leads")
	}
	c.checkVoters(1, 2)
	c.propose(next, "c")
	c.tick(3)
	c.checkSameValues3(append(want, "c"), 2, 3)

	// Restarts keep the membership: from the bootstrap file plus the log.
	for _, id := range []uint64{2, 3} {
		c.crash(id)
		c.start(id)
	}
	leader = c.waitLeader(300, 2, 3)
	c.checkVoters(1, 2)
	if err := c.cores[leader].RemoveVoter(2, testMember(3).DirectoryID); err != nil {
		t.Fatalf("shrink to one: %v", err)
	}
	c.waitChange(ChangeRemoveVoter, 2, 200)
	last := c.waitLeader(300, 2)
	if err := c.cores[last].RemoveVoter(1, testMember(2).DirectoryID); !errors.Is(err, ErrInvalidChange) {
		t.Fatalf("removing the only voter: %v", err)
	}
}

// A node replacing a failed disk keeps its node id but gets a new
// directory id: the old record is removed, the new one added, and the new
// node catches up from a snapshot when the log was compacted.
func TestDynamicQuorumReplacesADisk(t *testing.T) {
	cfg := smallConfig()
	cfg.SnapshotEntries, cfg.KeepEntries = 20, 5
	c := threeVoters(t, cfg)
	c.propose(1, seq("a", 0, 50)...)

	// Node 3's disk dies: a fresh directory, a new directory id.
	delete(c.cores, 3)
	if err := c.cores[1].AddVoter(testMember(3)); !errors.Is(err, ErrDuplicateVoter) {
		t.Fatalf("add over a live record: %v", err)
	}
	if err := c.cores[1].RemoveVoter(2, testMember(3).DirectoryID); err != nil {
		t.Fatalf("remove the dead disk: %v", err)
	}
	c.waitChange(ChangeRemoveVoter, 2, 200)
	fresh := testMember(3)
	fresh.DirectoryID = [16]byte{3, 0xee}
	c.fs[3], c.self[3] = vfs.NewMem(), fresh
	c.start(3)
	if err := c.cores[1].AddVoter(fresh); err != nil {
		t.Fatalf("add the new disk: %v", err)
	}
	if r := c.waitChange(ChangeAddVoter, 2, 300); r.Err != nil {
		t.Fatalf("add new disk: %v", r.Err)
	}
	c.checkVoters(0, 1, 2)
	if got, _ := c.cores[1].Membership().Voter(2); got.DirectoryID != fresh.DirectoryID {
		t.Fatalf("voter 2 has directory id %x", got.DirectoryID)
	}
	if c.sms[3].restores == 0 {
		t.Fatal("the new disk caught up without the snapshot the compacted log needs")
	}
	c.propose(1, "after")
	c.tick(3) // the commit index reaches followers with the next heartbeat
	c.checkSameValues3(append(seq("a", 0, 50), "after"), 1, 2, 3)
}

// A new disk started while the old one's record is still a voter takes no
// part in elections (it holds none of the old disk's votes), and adding it
// is refused until that voter is removed; then it joins afresh.
func TestDynamicQuorumNewDiskBeforeRemoval(t *testing.T) {
	cfg := smallConfig()
	cfg.SnapshotEntries, cfg.KeepEntries = 10, 2
	c := threeVoters(t, cfg)
	c.propose(1, seq("a", 0, 30)...)
	fresh := testMember(3)
	fresh.DirectoryID = [16]byte{3, 0xee}
	delete(c.cores, 3)
	c.fs[3], c.self[3] = vfs.NewMem(), fresh
	c.start(3)
	c.isolate(1) // an election in which the new disk's vote would decide
	c.tick(60)
	c.heal()
	if c.cores[2].IsLeader() || c.cores[3].IsLeader() {
		t.Fatal("a leader was elected with the new disk's vote")
	}
	leader := c.waitLeader(300)
	if err := c.cores[leader].AddVoter(fresh); !errors.Is(err, ErrDuplicateVoter) {
		t.Fatalf("adding the new disk over the old voter: %v", err)
	}
	if err := c.cores[leader].RemoveVoter(2, testMember(3).DirectoryID); err != nil {
		t.Fatalf("remove the old disk: %v", err)
	}
	c.waitChange(ChangeRemoveVoter, 2, 200)
	if err := c.cores[leader].AddVoter(fresh); err != nil {
		t.Fatalf("add the new disk: %v", err)
	}
	if r := c.waitChange(ChangeAddVoter, 2, 300); r.Err != nil {
		t.Fatalf("add the new disk: %v", r.Err)
	}
	c.checkVoters(0, 1, 2)
	c.propose(leader, "b")
	c.tick(3)
	c.checkSameValues3(append(seq("a", 0, 30), "b"), 1, 2, 3)
}

// threeVoters is a dynamic quorum that node 1 founds and grows to three
// voters.
func threeVoters(t *testing.T, cfg CoreConfig) *cluster {
	t.Helper()
	c := newDynamicCluster(t, 3, cfg)
	c.waitLeader(100, 1)
	c.tick(2)
	for _, id := range []uint64{2, 3} {
		if err := c.cores[1].AddVoter(testMember(id)); err != nil {
			t.Fatalf("add %d: %v", id, err)
		}
		c.waitChange(ChangeAddVoter, NodeID(id), 200)
	}
	return c
}

// checkSameValues3 is checkSameValues over some nodes only.
func (c *cluster) checkSameValues3(want []string, ids ...uint64) {
	c.t.Helper()
	for _, id := range ids {
		if got := c.sms[id].snapshotValues(); !slices.Equal(got, want) {
			c.t.Fatalf("node %d applied %d values, want %d", id, len(got), len(want))
		}
	}
}

// A voter that cannot catch up is never promoted: the add times out
// (AbortChange), leaves a learner that neither votes nor counts, and the
// same add resumes once the node is back.
func TestDynamicQuorumAddTimesOutAndResumes(t *testing.T) {
	c := newDynamicCluster(t, 2, smallConfig())
	c.waitLeader(100, 1)
	c.tick(2)
	c.crash(2)
	if err := c.cores[1].AddVoter(testMember(2)); err != nil {
		t.Fatalf("add: %v", err)
	}
	c.tick(50)
	c.cores[1].AbortChange()
	c.settle()
	if r := c.waitChange(ChangeAddVoter, 1, 1); !errors.Is(r.Err, ErrChangeAborted) {
		t.Fatalf("aborted add: %v", r.Err)
	}
	ms := c.cores[1].Membership()
	if got := voterIDs(ms); !slices.Equal(got, []int32{0}) || len(ms.Learners) != 1 || ms.Learners[0].NodeID != 1 {
		t.Fatalf("after the timeout: voters %v learners %v", got, ms.Learners)
	}
	c.propose(1, "alone") // a learner does not count: the founder commits alone
	c.start(2)
	if err := c.cores[1].AddVoter(testMember(2)); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if r := c.waitChange(ChangeAddVoter, 1, 200); r.Err != nil {
		t.Fatalf("resumed add: %v", r.Err)
	}
	c.checkVoters(0, 1)
	c.tick(3)
	c.checkSameValues3([]string{"alone"}, 1, 2)
}
