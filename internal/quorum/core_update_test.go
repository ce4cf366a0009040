package quorum

import (
	"errors"
	"slices"
	"testing"
)

// waitUpdate ticks until a voter asks for its record to be updated.
func (c *cluster) waitUpdate(maxTicks int) VoterUpdate {
	c.t.Helper()
	for range maxTicks {
		if len(c.updates) > 0 {
			u := c.updates[0]
			c.updates = c.updates[1:]
			return u
		}
		c.tick(1)
	}
	c.t.Fatalf("no UpdateRaftVoter asked for after %d ticks", maxTicks)
	return VoterUpdate{}
}

// recordOf is node's voter record as member id sees it.
func (c *cluster) recordOf(member uint64, node int32) Member {
	c.t.Helper()
	m, ok := c.cores[member].Membership().Voter(node)
	if !ok {
		c.t.Fatalf("node %d does not count node %d among the voters", member, node)
	}
	return m
}

// A voter restarted on another port asks the leader to record it; the
// leader checks the request as Kafka does, then every node (and, after a
// restart, the log) has the new endpoint.
func TestDynamicQuorumUpdatesAVoter(t *testing.T) {
	cfg := smallConfig()
	cfg.UpdateSelf = true
	c := threeVoters(t, cfg)
	c.propose(1, seq("a", 0, 10)...)
	c.tick(30)
	if len(c.updates) > 0 {
		t.Fatalf("voters whose records are current asked for updates: %+v", c.updates)
	}

	moved := testMember(3)
	moved.Listeners[0].Port = 19003
	c.crash(3)
	c.self[3] = moved
	c.start(3)
	u := c.waitUpdate(100)
	if u.Leader != 1 || u.Member.NodeID != 2 || u.Member.Listeners[0].Port != 19003 || u.Term != c.cores[1].Term() {
		t.Fatalf("update %+v, want node 2 on port 19003 to leader 1 in term %d", u, c.cores[1].Term())
	}
	term := int32(u.Term)
	leader := c.cores[1]
	for _, tc := range []struct {
		name  string
		m     Member
		epoch int32
		kraft VersionRange
		want  error
	}{
		{"on a follower", moved, term, SupportedKRaftVersions, ErrNotLeader},
		{"an older epoch", moved, term - 1, SupportedKRaftVersions, ErrFencedLeaderEpoch},
		{"a newer epoch", moved, term + 1, SupportedKRaftVersions, ErrUnknownLeaderEpoch},
		{"without kraft.version 1", moved, term, VersionRange{0, 0}, ErrInvalidChange},
		{"an empty range", moved, term, VersionRange{1, 0}, ErrInvalidChange},
		{"another directory", Member{NodeID: 2, DirectoryID: [16]byte{7}, Listeners: moved.Listeners}, -1, SupportedKRaftVersions, ErrVoterNotFound},
		{"a non-voter", testMember(9), -1, SupportedKRaftVersions, ErrVoterNotFound},
		{"no listeners", Member{NodeID: 2, DirectoryID: moved.DirectoryID}, -1, SupportedKRaftVersions, ErrInvalidChange},
		{"no CONTROLLER listener", Member{NodeID: 2, DirectoryID: moved.DirectoryID, Listeners: []Listener{{Name: "OTHER", Host: "h", Port: 1}}}, -1, SupportedKRaftVersions, ErrInvalidChange},
	} {
		core := leader
		if tc.name == "on a follower" {
			core = c.cores[2]
		}
		if err := core.UpdateVoter(tc.m, tc.epoch, tc.kraft); !errors.Is(err, tc.want) {
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := leader.UpdateVoter(u.Member, term, SupportedKRaftVersions); err != nil {
		t.Fatalf("update: %v", err)
	}
	if err := leader.AddVoter(testMember(4)); !errors.Is(err, ErrChangePending) {
		t.Fatalf("a change while the update is in flight: %v", err)
	}
	if r := c.waitChange(ChangeUpdateVoter, 2, 100); r.Err != nil {
		t.Fatalf("update: %v", r.Err)
	}
	c.tick(3)
	for _, id := range c.ids {
		if got := c.recordOf(id, 2); !slices.Equal(got.Listeners, moved.Listeners) || got.DirectoryID != moved.DirectoryID {
			t.Fatalf("node %d records node 2 as %+v", id, got)
		}
	}
	c.checkVoters(0, 1, 2)
	c.tick(3 * selfUpdateRetryElections * cfg.ElectionTicks)
	if len(c.updates) > 0 {
		t.Fatalf("the updated voter asked again: %+v", c.updates)
	}
	// The same record again succeeds without a change.
	if err := leader.UpdateVoter(moved, -1, SupportedKRaftVersions); err != nil {
		t.Fatalf("same record: %v", err)
	}
	if r := c.waitChange(ChangeUpdateVoter, 2, 5); r.Err != nil {
		t.Fatalf("same record: %v", r.Err)
	}
	// The record is the log's: a restarted node rebuilds it.
	c.crash(2)
	c.start(2)
	c.tick(10)
	if got := c.recordOf(2, 2); !slices.Equal(got.Listeners, moved.Listeners) {
		t.Fatalf("after a restart node 2 records node 2 as %+v", got)
	}
	c.propose(c.waitLeader(100), "b")
	c.tick(3)
	c.checkSameValues3(append(seq("a", 0, 10), "b"), 1, 2, 3)
}

// A voter whose request goes unanswered asks again, and a leader that
// came back on another port records its own endpoint without a request.
func TestDynamicQuorumUpdatesRetryAndTheLeadersOwn(t *testing.T) {
	cfg := smallConfig()
	cfg.UpdateSelf = true
	c := threeVoters(t, cfg)
	moved := testMember(2)
	moved.Listeners[0].Host = "elsewhere"
	c.crash(2)
	c.self[2] = moved
	c.start(2)
	first := c.waitUpdate(100)
	second := c.waitUpdate(3 * selfUpdateRetryElections * cfg.ElectionTicks) // the first is dropped
	if first.Member.Listeners[0].Host != "elsewhere" || second.Member.Listeners[0].Host != "elsewhere" {
		t.Fatalf("updates %+v, %+v", first, second)
	}

	// Node 1, the leader, restarts on a new port. Its own requests are
	// never answered here: its record changes only once it leads again and
	// writes it itself. Node 2's are answered by whoever leads.
	movedLeader := testMember(1)
	movedLeader.Listeners[0].Port = 19001
	c.crash(1)
	c.self[1] = movedLeader
	c.start(1)
	recorded := func(id uint64, node int32, want Member) bool {
		return slices.Equal(c.recordOf(id, node).Listeners, want.Listeners)
	}
	for range 2000 {
		leader := c.waitLeader(300)
		for _, u := range c.updates {
			if u.Member.NodeID == 1 {
				if err := c.cores[leader].UpdateVoter(u.Member, int32(u.Term), SupportedKRaftVersions); err != nil && !errors.Is(err, ErrChangePending) && !errors.Is(err, ErrFencedLeaderEpoch) && !errors.Is(err, ErrNotLeader) {
					t.Fatalf("update of node 2: %v", err)
				}
			}
		}
		c.updates = nil
		if recorded(leader, 1, moved) && leader != 1 {
			c.cores[leader].rn.TransferLeader(1)
		}
		if leader == 1 && recorded(1, 0, movedLeader) && recorded(1, 1, moved) {
			break
		}
		c.tick(1)
	}
	c.tick(5)
	for _, id := range c.ids {
		if !recorded(id, 0, movedLeader) || !recorded(id, 1, moved) {
			t.Fatalf("node %d records node 1 as %+v and node 2 as %+v", id, c.recordOf(id, 0), c.recordOf(id, 1))
		}
	}
}
