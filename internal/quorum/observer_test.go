package quorum

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// follower is an observer with a test state machine: the values applied,
// unwrapped from their proposal envelopes as a Node's Apply sees them.
type follower struct {
	obs    *Observer
	values []string
}

func newFollower() *follower {
	f := &follower{}
	f.obs = NewObserver(
		func(_ uint64, data []byte) { f.values = append(f.values, string(data)) },
		func(_ SnapshotInfo, data []byte) error {
			// The voters' test machine stores whole entries (envelope
			// included); unwrap them as Apply would have.
			var raw []string
			if err := json.Unmarshal(data, &raw); err != nil {
				return err
			}
			f.values = f.values[:0]
			for _, r := range raw {
				_, v, ok := decodeProposal([]byte(r))
				if !ok {
					return errors.New("snapshot holds an entry without envelope")
				}
				f.values = append(f.values, string(v))
			}
			return nil
		}, quietLogger())
	return f
}

// catchUp fetches from voter id over the wire encoding until nothing is
// left, loading the snapshot when the log was compacted.
func (f *follower) catchUp(t *testing.T, c *cluster, id uint64) (snapshots int) {
	t.Helper()
	core := c.cores[id]
	for range 1000 {
		read, err := core.readCommitted(f.obs.Next(), core.Applied(), 64)
		if err != nil {
			t.Fatal(err)
		}
		if read.Compacted {
			snap, err := core.ms.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if err := f.obs.Restore(read.Snapshot, snap.GetData()); err != nil {
				t.Fatal(err)
			}
			snapshots++
			continue
		}
		if len(read.Entries) == 0 {
			return snapshots
		}
		wire, err := EncodeEntryBatches(nil, read.Entries)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := DecodeEntryBatches(wire)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.obs.ApplyEntries(entries, read.Committed); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("observer did not catch up")
	return snapshots
}

func enveloped(values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(encodeProposal(proposalTag{incarnation: 7, seq: uint64(i)}, []byte(v)))
	}
	return out
}

func TestObserverFollowsEntriesThenSnapshot(t *testing.T) {
	cfg := smallConfig()
	cfg.SnapshotEntries, cfg.KeepEntries = 10, 2
	c := newCluster(t, 3, cfg)
	leader := c.waitLeader(100)
	first := seq("a", 0, 5)
	c.propose(leader, enveloped(first)...)

	f := newFollower()
	if n := f.catchUp(t, c, leader); n != 0 {
		t.Fatalf("loaded %d snapshots from an uncompacted log", n)
	}
	if !slices.Equal(f.values, first) {
		t.Fatalf("observer has %v, want %v", f.values, first)
	}

	// The log moves far enough to be compacted past the observer.
	more := seq("b", 0, 30)
	c.propose(leader, enveloped(more)...)
	if c.cores[leader].SnapshotIndex() == 0 {
		t.Fatal("no snapshot was taken; the test needs a compacted log")
	}
	// Any voter serves: committed entries are the same everywhere.
	var other uint64
	for _, id := range c.ids {
		if id != leader {
			other = id
		}
	}
	if n := f.catchUp(t, c, other); n != 1 {
		t.Fatalf("loaded %d snapshots, want 1", n)
	}
	want := append(slices.Clone(first), more...)
	if !slices.Equal(f.values, want) {
		t.Fatalf("observer has %v, want %v", f.values, want)
	}
	if f.obs.Applied() != c.cores[other].Applied() {
		t.Fatalf("observer applied %d, voter %d", f.obs.Applied(), c.cores[other].Applied())
	}
}

func TestObserverRefusesGapsAndUncommittedEntries(t *testing.T) {
	f := newFollower()
	entry := func(index uint64, v string) *raftpb.Entry {
		return &raftpb.Entry{Index: new(index), Term: new(uint64(1)), Type: raftpb.EntryNormal.Enum(), Data: []byte(enveloped([]string{v})[0])}
	}
	if err := f.obs.ApplyEntries([]*raftpb.Entry{entry(1, "x"), entry(2, "y")}, 1); err == nil {
		t.Fatal("an entry past the committed index was applied")
	}
	if len(f.values) != 0 || f.obs.Applied() != 0 {
		t.Fatalf("a refused batch applied %v", f.values)
	}
	if err := f.obs.ApplyEntries([]*raftpb.Entry{entry(2, "y")}, 5); !errors.Is(err, ErrObserverGap) {
		t.Fatalf("gap: err = %v, want ErrObserverGap", err)
	}
	if err := f.obs.ApplyEntries([]*raftpb.Entry{entry(1, "x"), entry(2, "y")}, 2); err != nil {
		t.Fatal(err)
	}
	// A repeated answer is skipped, not applied twice.
	if err := f.obs.ApplyEntries([]*raftpb.Entry{entry(2, "y"), entry(3, "z")}, 3); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.values, []string{"x", "y", "z"}) {
		t.Fatalf("values %v", f.values)
	}
	if err := f.obs.Restore(SnapshotInfo{Index: 2}, nil); err == nil {
		t.Fatal("a snapshot behind the applied index was loaded")
	}
}
