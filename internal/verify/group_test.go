package verify

import (
	"maps"
	"strings"
	"testing"
)

// Group members in these histories are consumers 3 and 4 of group "g",
// with no assigned consumers, so only the group's kinds (and poll order)
// are counted.
func newGroupHistory() *historyBuilder {
	b := newHistory(AcksAll, true)
	b.h.Meta.Consumers, b.h.Meta.GroupMembers, b.h.Meta.Group = 0, 2, "g"
	// Partition 0 holds p1-1..p1-4 at offsets 0..3.
	for s := int64(1); s <= 4; s++ {
		b.sendAck(1, s, 0, s-1)
	}
	return b
}

func (b *historyBuilder) assign(member int, partitions ...int32) *historyBuilder {
	return b.add(Event{Type: EventAssign, Consumer: member, Group: "g", Partitions: partitions, Note: "assigned"})
}

func (b *historyBuilder) revoke(member int, partitions ...int32) *historyBuilder {
	return b.add(Event{Type: EventRevoke, Consumer: member, Group: "g", Partitions: partitions, Note: "revoked"})
}

// commit has member try to commit offset for partition 0; errText empty
// means the coordinator accepted it.
func (b *historyBuilder) commit(member int, offset int64, errText string) *historyBuilder {
	b.add(Event{Type: EventCommit, Consumer: member, Group: "g", Offset: offset})
	return b.add(Event{Type: EventCommitDone, Consumer: member, Group: "g", Offset: offset, Err: errText})
}

// groupRead has member read offsets from..to (inclusive) of partition 0.
func (b *historyBuilder) groupRead(member int, from, to int64) *historyBuilder {
	for o := from; o <= to; o++ {
		b.add(Event{Type: EventRead, Consumer: member, Group: "g", Poll: 1, Offset: o, Value: value(1, o+1)})
	}
	return b
}

func TestCheckGroup(t *testing.T) {
	tests := []struct {
		name         string
		history      *historyBuilder
		valid        bool
		counts       map[Kind]int
		redeliveries int
		stale        int // StaleCommits
		detail       string
	}{
		{
			name:    "one member reads everything and commits",
			history: newGroupHistory().assign(3, 0).groupRead(3, 0, 3).commit(3, 4, ""),
			valid:   true, counts: map[Kind]int{},
		},
		{
			name: "handover at the commit: no re-delivery",
			history: newGroupHistory().assign(3, 0).groupRead(3, 0, 1).commit(3, 2, "").revoke(3, 0).
				assign(4, 0).groupRead(4, 2, 3).commit(4, 4, ""),
			valid: true, counts: map[Kind]int{},
		},
		{
			name: "handover before the reads were committed: re-deliveries, allowed",
			history: newGroupHistory().assign(3, 0).groupRead(3, 0, 2).commit(3, 1, "").revoke(3, 0).
				assign(4, 0).groupRead(4, 1, 3),
			valid: true, counts: map[Kind]int{}, redeliveries: 2,
		},
		{
			name: "a failed commit may have been applied: resuming there is no skip",
			history: newGroupHistory().assign(3, 0).groupRead(3, 0, 2).commit(3, 3, "REQUEST_TIMED_OUT").revoke(3, 0).
				assign(4, 0).groupRead(4, 3, 3),
			valid: true, counts: map[Kind]int{},
		},
		{
			name: "the same member given the partition back resumes at its commit",
			history: newGroupHistory().assign(3, 0).groupRead(3, 0, 2).commit(3, 2, "").revoke(3, 0).
				assign(3, 0).groupRead(3, 2, 3),
			valid: true, counts: map[Kind]int{}, redeliveries: 1,
		},
		{
			name: "resume past the commit skips records",
			history: newGroupHistory().assign(3, 0).groupRead(3, 0, 0).commit(3, 1, "").revoke(3, 0).
				assign(4, 0).groupRead(4, 3, 3),
			counts: map[Kind]int{GroupResumeSkip: 1, GroupLost: 2},
			detail: "member 4 resumed partition 0 at offset 3, past the highest commit 1, skipping 2 records",
		},
		{
			name:    "first owner starting past the log start with no commit skips",
			history: newGroupHistory().assign(3, 0).groupRead(3, 1, 3),
			counts:  map[Kind]int{GroupResumeSkip: 1, GroupLost: 1},
			detail:  "past the highest commit 0, skipping 1 records",
		},
		{
			name: "an accepted commit going back: the new owner resumed below it",
			history: newGroupHistory().assign(3, 0).groupRead(3, 0, 3).commit(3, 4, "").revoke(3, 0).
				assign(4, 0).commit(4, 2, ""),
			counts: map[Kind]int{CommitRegressed: 1},
			detail: "member 4's commit of offset 2 for partition 0 was accepted after member 3's of offset 4",
		},
		{
			name:    "one member's accepted commits going back",
			history: newGroupHistory().assign(3, 0).groupRead(3, 0, 3).commit(3, 4, "").commit(3, 3, ""),
			counts:  map[Kind]int{CommitRegressed: 1},
			detail:  "member 3's commit of offset 3 for partition 0 was accepted after member 3's of offset 4",
		},
		{
			// The partition moved to 4 while 3 had not heard yet: the
			// classic protocol accepts 3's late commit (right generation),
			// lowering the offset; that is re-delivery, not loss.
			name: "a late commit from the former owner is allowed",
			history: newGroupHistory().assign(3, 0).groupRead(3, 0, 1).assign(4, 0).groupRead(4, 0, 3).commit(4, 4, "").
				commit(3, 2, "").revoke(3, 0),
			valid: true, counts: map[Kind]int{}, redeliveries: 2, stale: 1,
		},
		{
			name: "a commit answered after the member gave the partition up is allowed",
			history: newGroupHistory().assign(3, 0).groupRead(3, 0, 1).add(Event{Type: EventCommit, Consumer: 3, Group: "g", Offset: 2}).
				revoke(3, 0).assign(4, 0).groupRead(4, 0, 3).commit(4, 4, "").
				add(Event{Type: EventCommitDone, Consumer: 3, Group: "g", Offset: 2}),
			valid: true, counts: map[Kind]int{}, redeliveries: 2, stale: 1,
		},
		{
			name:    "group lost: a later offset read, the record never",
			history: newGroupHistory().assign(3, 0).groupRead(3, 0, 1).groupRead(3, 3, 3),
			counts:  map[Kind]int{GroupLost: 1, PollSkip: 1},
			detail:  "p1-3: acknowledged at 0@2, never read by the group, though offset 3 was",
		},
		{
			name:    "group unseen: nothing after it read",
			history: newGroupHistory().assign(3, 0).groupRead(3, 0, 2),
			counts:  map[Kind]int{GroupUnseen: 1},
			detail:  "p1-4: acknowledged at 0@3, never read by the group by the end",
		},
		{
			name:    "a member going back within one assignment is still non-monotonic",
			history: newGroupHistory().assign(3, 0).groupRead(3, 0, 3).groupRead(3, 2, 3),
			counts:  map[Kind]int{NonMonotonicPoll: 1},
			// The second read of offset 3 follows offset 2: only the step
			// back is an anomaly; both reads count as re-deliveries.
			redeliveries: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(&tt.history.h)
			v := r.Verdict(tt.history.h.Meta)
			if r.Valid != tt.valid {
				t.Errorf("Valid = %v, want %v\n%s", r.Valid, tt.valid, v)
			}
			got := map[Kind]int{}
			for k, n := range r.Counts {
				if n != 0 {
					got[k] = n
				}
			}
			if !maps.Equal(got, tt.counts) {
				t.Errorf("counts = %v, want %v\n%s", got, tt.counts, v)
			}
			if r.Redeliveries != tt.redeliveries || r.StaleCommits != tt.stale {
				t.Errorf("Redeliveries = %d, StaleCommits = %d, want %d and %d", r.Redeliveries, r.StaleCommits, tt.redeliveries, tt.stale)
			}
			if tt.detail != "" && !strings.Contains(v, tt.detail) {
				t.Errorf("verdict does not mention %q:\n%s", tt.detail, v)
			}
		})
	}
}

func TestVerdictShowsGroupTotals(t *testing.T) {
	b := newGroupHistory().assign(3, 0).groupRead(3, 0, 2).commit(3, 1, "").commit(3, 3, "NOT_COORDINATOR").revoke(3, 0).
		assign(4, 0).groupRead(4, 1, 3).commit(4, 4, "").commit(3, 2, "")
	r := Check(&b.h)
	for _, want := range []string{
		"group g: 2 members, 6 reads, 2 re-deliveries (allowed after a rebalance or failure), 3 assignment changes, 3 commits accepted, 1 failed",
		"1 commits from members whose partition had moved lowered a committed offset (allowed by the classic group protocol)",
	} {
		if v := r.Verdict(b.h.Meta); !strings.Contains(v, want) {
			t.Errorf("verdict does not say %q:\n%s", want, v)
		}
	}
}
