package chaos

import (
	"slices"
	"testing"
	"time"
)

func TestReassignTargetMovesTheLeader(t *testing.T) {
	for _, tt := range []struct {
		name     string
		replicas []int32
		leader   int32
		pick     int
		brokers  int
		want     []int32
	}{
		{"leader replaced by the first outsider", []int32{2, 3, 1}, 3, 0, 5, []int32{2, 4, 1}},
		{"pick chooses among outsiders", []int32{2, 3, 1}, 3, 1, 5, []int32{2, 5, 1}},
		{"pick wraps", []int32{2, 3, 1}, 3, 7, 5, []int32{2, 5, 1}},
		{"leaderless: the preferred replica moves", []int32{2, 3, 1}, -1, 0, 5, []int32{4, 3, 1}},
		{"every broker a replica: rotate", []int32{1, 2, 3}, 1, 0, 3, []int32{2, 3, 1}},
		{"one replica on one broker: nothing", []int32{1}, 1, 0, 1, nil},
		{"no replicas", nil, -1, 0, 5, nil},
	} {
		got := reassignTarget(tt.replicas, tt.leader, tt.pick, tt.brokers)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: reassignTarget(%v, %d, %d, %d) = %v, want %v", tt.name, tt.replicas, tt.leader, tt.pick, tt.brokers, got, tt.want)
		}
		if got != nil && len(got) != len(tt.replicas) {
			t.Errorf("%s: the replication factor changed: %v", tt.name, got)
		}
	}
}

// reassign is a kind of its own, in "all", and drawn by the schedule with
// a hold bounding its wait.
func TestParseNemesisReassign(t *testing.T) {
	kinds, err := ParseNemesis("reassign,kill")
	if err != nil || !slices.Equal(kinds, []FaultKind{FaultReassign, FaultKill}) {
		t.Fatalf("ParseNemesis(reassign,kill) = %v, %v", kinds, err)
	}
	if all, _ := ParseNemesis("all"); !slices.Contains(all, FaultReassign) {
		t.Fatalf("all lacks reassign: %v", all)
	}
	var drawn bool
	for _, s := range PlanFaults(3, 120*time.Second, []FaultKind{FaultReassign, FaultKill}, 5) {
		if s.kind == FaultReassign {
			drawn = true
			if s.hold < minHold || s.hold > maxHold {
				t.Fatalf("reassign step without a bounded hold: %v", s)
			}
		}
	}
	if !drawn {
		t.Fatal("a 120 s schedule of reassign,kill draws no reassign")
	}
}
