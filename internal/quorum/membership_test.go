package quorum

import (
	"errors"
	"slices"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

func TestSnapshotEnvelope(t *testing.T) {
	ms := Membership{Dynamic: true, Voters: []Member{testMember(1), testMember(2)}, Learners: []Member{testMember(3)}}
	data, err := wrapSnapshot(ms, []byte("image"))
	if err != nil {
		t.Fatal(err)
	}
	got, rest, err := UnwrapSnapshot(data)
	if err != nil || string(rest) != "image" || got == nil || len(got.Voters) != 2 || len(got.Learners) != 1 || got.Learners[0].NodeID != 2 {
		t.Fatalf("unwrapped %+v %q %v", got, rest, err)
	}
	// A static quorum's snapshot is the image alone.
	if got, rest, err := UnwrapSnapshot([]byte("image")); err != nil || got != nil || string(rest) != "image" {
		t.Fatalf("plain snapshot: %+v %q %v", got, rest, err)
	}
	for _, bad := range [][]byte{data[:len(membershipMagic)+2], data[:len(membershipMagic)+10]} {
		if _, _, err := UnwrapSnapshot(bad); !errors.Is(err, ErrCorruptState) {
			t.Errorf("truncated envelope of %d bytes: %v", len(bad), err)
		}
	}
}

// An observer follows the membership from the configuration changes it
// applies, and from a snapshot's envelope.
func TestObserverFollowsMembership(t *testing.T) {
	var applied []string
	obs := NewObserver(func(_ uint64, data []byte) { applied = append(applied, string(data)) },
		func(SnapshotInfo, []byte) error { return nil }, quietLogger())
	if _, ok := obs.Membership(); ok {
		t.Fatal("membership before any entry")
	}
	entry := func(index uint64, t raftpb.ConfChangeType, m Member) *raftpb.Entry {
		cc, err := newConfChange(t, m)
		if err != nil {
			panic(err)
		}
		typ, data, err := raftpb.MarshalConfChange(cc)
		if err != nil {
			panic(err)
		}
		return &raftpb.Entry{Index: new(index), Term: new(uint64(1)), Type: typ.Enum(), Data: data}
	}
	normal := &raftpb.Entry{Index: new(uint64(3)), Term: new(uint64(1)), Data: encodeProposal(proposalTag{1, 1}, []byte("x"))}
	entries := []*raftpb.Entry{
		entry(1, raftpb.ConfChangeAddNode, testMember(1)),
		entry(2, raftpb.ConfChangeAddLearnerNode, testMember(2)),
		normal,
		entry(4, raftpb.ConfChangeAddNode, testMember(2)),
		entry(5, raftpb.ConfChangeAddLearnerNode, testMember(1)),
	}
	if err := obs.ApplyEntries(entries, 5); err != nil {
		t.Fatal(err)
	}
	ms, ok := obs.Membership()
	if !ok || !slices.Equal(voterIDs(ms), []int32{1}) || len(ms.Learners) != 1 || ms.Learners[0].NodeID != 0 {
		t.Fatalf("membership %+v", ms)
	}
	if !slices.Equal(applied, []string{"x"}) {
		t.Fatalf("applied %v", applied)
	}
	data, _ := wrapSnapshot(Membership{Voters: []Member{testMember(3)}}, []byte("img"))
	if err := obs.Restore(SnapshotInfo{Index: 9, Term: 2}, data); err != nil {
		t.Fatal(err)
	}
	if ms, _ := obs.Membership(); !slices.Equal(voterIDs(ms), []int32{2}) {
		t.Fatalf("after a snapshot: %+v", ms)
	}
}
