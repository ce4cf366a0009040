package node

import (
	"slices"
	"testing"

	"github.com/skein-log/skein/internal/replica"
)

// TestQuietStateEpochChangeAtSameLogEnd: a reader's loads of the quiet
// state hold only if nothing but the log end changed meanwhile. An epoch
// change that leaves the log end where it was (a new leader epoch on an
// idle partition), or a new replica set, between a reader's first and
// second look must make it decline, or it could admit a fetch against
// the old epoch's followers (or the new epoch with the old followers'
// time slots). Keyed on the log end, as it once was, the check passed.
func TestQuietStateEpochChangeAtSameLogEnd(t *testing.T) {
	var s quietState
	s.at.Store(-1)
	s.fetches.Store(&quietFetches{})
	s.publish(replica.Quiet{OK: true, LogEnd: 10, Epoch: 3}, []int32{2, 3}, false)
	snap, ok := s.load()
	if !ok || snap.at != 10 || snap.epoch != 3 || !slices.Equal(snap.fetches.ids, []int32{2, 3}) || !s.unchanged(snap) {
		t.Fatalf("loaded %+v %v", snap, ok)
	}

	// The log end moves: the snapshot's epoch and followers still hold.
	s.publish(replica.Quiet{OK: true, LogEnd: 12, Epoch: 3}, []int32{2, 3}, true)
	if !s.unchanged(snap) {
		t.Fatal("a log end move alone invalidated the snapshot")
	}

	// Not quiet, then a new epoch at the same log end: declined.
	snap, _ = s.load()
	s.publish(replica.Quiet{LogEnd: -1}, nil, true)
	s.publish(replica.Quiet{OK: true, LogEnd: 12, Epoch: 4}, []int32{2, 3}, true)
	if s.unchanged(snap) {
		t.Fatal("an epoch change at the same log end kept the snapshot")
	}
	if again, ok := s.load(); !ok || again.epoch != 4 || again.fetches != snap.fetches {
		t.Fatalf("after the epoch change loaded %+v %v (the followers' slots are kept)", again, ok)
	}

	// New followers at the same log end and epoch: declined, new slots.
	snap, _ = s.load()
	s.publish(replica.Quiet{OK: true, LogEnd: 12, Epoch: 4}, []int32{3}, false)
	if s.unchanged(snap) {
		t.Fatal("a new replica set at the same log end kept the snapshot")
	}
	if again, _ := s.load(); !slices.Equal(again.fetches.ids, []int32{3}) || again.fetches == snap.fetches {
		t.Fatalf("after the new replica set loaded %+v", again)
	}

	// A writer midway (seq odd): a reader declines at once.
	s.seq.Add(1)
	if _, ok := s.load(); ok {
		t.Fatal("loaded while a change is being published")
	}
	s.seq.Add(1)
	if _, ok := s.load(); !ok {
		t.Fatal("not loaded after the change")
	}
}
