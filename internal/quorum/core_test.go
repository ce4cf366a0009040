package quorum

import (
	"errors"
	"slices"
	"testing"
)

func smallConfig() CoreConfig {
	return CoreConfig{ElectionTicks: 10, HeartbeatTicks: 1}
}

// checkSameValues fails unless every live node's machine holds want.
func (c *cluster) checkSameValues(want []string) {
	c.t.Helper()
	for _, id := range c.ids {
		if c.cores[id] == nil {
			continue
		}
		if got := c.sms[id].snapshotValues(); !slices.Equal(got, want) {
			c.t.Fatalf("node %d applied %d values %v, want %d", id, len(got), got, len(want))
		}
	}
}

func TestCoreElectsAndReplicates(t *testing.T) {
	c := newCluster(t, 3, smallConfig())
	leader := c.waitLeader(100)
	values := seq("v", 0, 20)
	c.propose(leader, values...)
	c.checkSameValues(values)

	for _, id := range c.ids {
		if id == leader {
			continue
		}
		err := c.cores[id].Propose([]byte("x"))
		var nle *NotLeaderError
		if !errors.Is(err, ErrNotLeader) || !errors.As(err, &nle) || nle.Leader != leader {
			t.Fatalf("propose on follower %d: err = %v, want NotLeaderError{%d}", id, err, leader)
		}
	}
	if err := c.cores[leader].Propose(nil); !errors.Is(err, ErrEmptyEntry) {
		t.Fatalf("empty proposal: err = %v", err)
	}
	if err := c.cores[leader].Propose(make([]byte, DefaultMaxEntryBytes+1)); !errors.Is(err, ErrEntryTooLarge) {
		t.Fatalf("oversized proposal: err = %v", err)
	}
}

func TestCoreIsolatedLeaderStepsDown(t *testing.T) {
	c := newCluster(t, 3, smallConfig())
	old := c.waitLeader(100)
	c.propose(old, "before")
	c.isolate(old)
	var others []uint64
	for _, id := range c.ids {
		if id != old {
			others = append(others, id)
		}
	}
	// CheckQuorum: the isolated leader steps down within an election
	// timeout or two; the majority elects a new leader meanwhile.
	c.tick(3 * 10)
	if c.cores[old].IsLeader() {
		t.Fatalf("isolated leader %d still leads", old)
	}
	fresh := c.waitLeader(100, others...)
	if err := c.cores[old].Propose([]byte("lost")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("propose on isolated old leader: %v", err)
	}
	c.propose(fresh, "after")
	term := c.cores[fresh].Term()

	// PreVote: the isolated node, campaigning alone, never bumped its term
	// for real, so rejoining does not depose the new leader.
	c.tick(5 * 10)
	c.heal()
	c.tick(3 * 10)
	if got := c.waitLeader(1); got != fresh || c.cores[fresh].Term() != term {
		t.Fatalf("after heal: leader %d term %d, want leader %d term %d", got, c.cores[fresh].Term(), fresh, term)
	}
	c.checkSameValues([]string{"before", "after"})
}

func TestCoreRestartFromDisk(t *testing.T) {
	tests := []struct {
		name  string
		crash func(c *cluster) []uint64
	}{
		{"one follower", func(c *cluster) []uint64 {
			leader := c.waitLeader(1)
			for _, id := range c.ids {
				if id != leader {
					return []uint64{id}
				}
			}
			return nil
		}},
		{"the leader", func(c *cluster) []uint64 { return []uint64{c.waitLeader(1)} }},
		{"every node", func(c *cluster) []uint64 { return c.ids }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, 3, smallConfig())
			leader := c.waitLeader(100)
			values := seq("v", 0, 30)
			c.propose(leader, values...)
			c.checkSameValues(values)
			before := map[uint64][]Entry{}
			for _, id := range c.ids {
				before[id] = c.applied[id]
			}
			victims := tt.crash(c)
			for _, id := range victims {
				c.crash(id)
			}
			for _, id := range victims {
				c.start(id)
			}
			leader = c.waitLeader(100)
			c.tick(3)
			// A restarted node re-applies exactly what it had committed,
			// plus possibly a new leader's empty entry.
			for _, id := range victims {
				got := c.applied[id]
				if len(got) < len(before[id]) || !slices.EqualFunc(got[:len(before[id])], before[id], sameEntry) {
					t.Fatalf("node %d replayed %v, want prefix %v", id, got, before[id])
				}
			}
			more := seq("w", 0, 5)
			c.propose(leader, more...)
			c.checkSameValues(append(values, more...))
		})
	}
}

func snapshotConfig() CoreConfig {
	cfg := smallConfig()
	cfg.SnapshotEntries = 20
	cfg.KeepEntries = 5
	cfg.SegmentBytes = 2048 // a handful of entries per segment, so compaction frees files
	cfg.MaxEntryBytes = 1024
	return cfg
}

func TestCoreSnapshotAndCompaction(t *testing.T) {
	c := newCluster(t, 3, snapshotConfig())
	leader := c.waitLeader(100)
	values := seq("value", 0, 100)
	for _, v := range values {
		c.propose(leader, v) // one Ready per entry, so snapshots are taken along the way
	}
	c.checkSameValues(values)
	for _, id := range c.ids {
		core := c.cores[id]
		if core.SnapshotIndex() < 80 {
			t.Fatalf("node %d: snapshot index %d, want >= 80", id, core.SnapshotIndex())
		}
		if start := core.disk.log.LogStartOffset(); start == 0 || start > int64(core.SnapshotIndex()) {
			t.Fatalf("node %d: log start index %d, snapshot %d", id, start+1, core.SnapshotIndex())
		}
		first, _ := core.ms.FirstIndex()
		if first > core.SnapshotIndex()-4 {
			t.Fatalf("node %d: first index %d, want entries kept behind snapshot %d", id, first, core.SnapshotIndex())
		}
	}
	// Restart everyone: state comes back from snapshot + replay.
	for _, id := range c.ids {
		c.crash(id)
		c.start(id)
	}
	leader = c.waitLeader(100)
	c.propose(leader, "last")
	c.checkSameValues(append(values, "last"))
	for _, id := range c.ids {
		if c.sms[id].restores != 1 {
			t.Fatalf("node %d: %d restores, want 1", id, c.sms[id].restores)
		}
		// A state machine that tracks its index (the broker's image
		// version) needs the snapshot's.
		if got, want := c.sms[id].restoredAt, c.cores[id].SnapshotIndex(); got != want {
			t.Fatalf("node %d: restored at index %d, snapshot index %d", id, got, want)
		}
	}
}

func TestCoreLaggingFollowerGetsSnapshot(t *testing.T) {
	c := newCluster(t, 3, snapshotConfig())
	leader := c.waitLeader(100)
	c.propose(leader, "first")
	var lagging uint64
	for _, id := range c.ids {
		if id != leader {
			lagging = id
			break
		}
	}
	c.crash(lagging)
	values := []string{"first"}
	for _, v := range seq("v", 0, 60) {
		c.propose(leader, v)
		values = append(values, v)
	}
	if first, _ := c.cores[leader].ms.FirstIndex(); first < 10 {
		t.Fatalf("leader first index %d: log was not compacted", first)
	}
	c.start(lagging)
	c.tick(20)
	c.checkSameValues(values)
	if c.sms[lagging].restores == 0 {
		t.Fatalf("lagging node %d caught up without a snapshot", lagging)
	}
	if got := c.cores[lagging].SnapshotIndex(); got < 40 {
		t.Fatalf("lagging node snapshot index %d", got)
	}
	if got, want := c.sms[lagging].restoredAt, c.cores[lagging].SnapshotIndex(); got != want {
		t.Fatalf("lagging node restored at index %d, snapshot index %d", got, want)
	}
	// And the installed snapshot survives its restart.
	c.crash(lagging)
	c.start(lagging)
	c.tick(5)
	c.checkSameValues(values)
}

func sameEntry(a, b Entry) bool {
	return a.Index == b.Index && a.Term == b.Term && string(a.Data) == string(b.Data)
}
