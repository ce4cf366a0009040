package balancer

import (
	"fmt"
	"testing"
)

var dirCfg = Config{DiskImbalancePercent: 10, DiskMinImbalanceBytes: 100, MaxDiskUsagePercent: 80}

// dirs builds one broker's report: each directory on its own volume of
// total bytes with used bytes taken, holding replicas of topic t of the
// sizes given.
func dirsReport(total int64, used []int64, sizes ...[]int64) Report {
	var rb ReportBuilder
	n := 0
	for i, ss := range sizes {
		rb.Dir(fmt.Sprintf("/d%d", i), total, total-used[i], false)
		for _, size := range ss {
			rb.Replica("t", int32(n), size, false)
			n++
		}
	}
	return rb.Report()
}

func dirBytes(r Report, moves []DirMove) map[string]int64 {
	out := map[string]int64{}
	where := map[TopicPartition]string{}
	size := map[TopicPartition]int64{}
	for _, d := range r.Dirs {
		for tp, s := range d.Replicas {
			where[tp], size[tp] = d.Path, s
		}
	}
	for _, m := range moves {
		where[TopicPartition{m.Topic, m.Partition}] = m.To
	}
	for tp, d := range where {
		out[d] += size[tp]
	}
	return out
}

func TestDecideDirsMovesToTheEmptiest(t *testing.T) {
	r := dirsReport(10_000, []int64{3000, 3000, 3000}, []int64{1000, 800, 400}, []int64{300}, []int64{})
	moves := DecideDirs(map[int32]Report{7: r}, nil, dirCfg)
	if len(moves) != 1 {
		t.Fatalf("moves %v, want one", moves)
	}
	m := moves[0]
	// From /d0 (2,200 bytes) to /d2 (none): 1,000 would leave 1,200 and
	// 1,000 (worst 1,200); 800 leaves 1,400 and 800; 400 leaves 1,800.
	if m.Broker != 7 || m.From != "/d0" || m.To != "/d2" || m.Partition != 0 || m.Bytes != 1000 {
		t.Fatalf("move %v", m)
	}
}

func TestDecideDirsNone(t *testing.T) {
	cases := map[string]Report{
		"even":                              dirsReport(10_000, []int64{0, 0}, []int64{500, 500}, []int64{1000}),
		"within the percentage":             dirsReport(10_000, []int64{0, 0}, []int64{1050}, []int64{950}),
		"below the minimum bytes":           dirsReport(10_000, []int64{0, 0}, []int64{60}, []int64{0}),
		"one directory":                     dirsReport(10_000, []int64{0}, []int64{500, 500}),
		"one big partition cannot be split": dirsReport(10_000, []int64{0, 0}, []int64{5000}, []int64{}),
	}
	for name, r := range cases {
		if moves := DecideDirs(map[int32]Report{1: r}, nil, dirCfg); len(moves) != 0 {
			t.Errorf("%s: moves %v", name, moves)
		}
	}
	// A move under way on the broker: nothing more until it ends.
	r := dirsReport(10_000, []int64{0, 0}, []int64{1000, 800}, []int64{})
	r.Dirs[1].Futures = []TopicPartition{{"t", 0}}
	if moves := DecideDirs(map[int32]Report{1: r}, nil, dirCfg); len(moves) != 0 {
		t.Errorf("with a future log: moves %v", moves)
	}
	// Unknown space: nothing compares.
	r = dirsReport(10_000, []int64{0, 0}, []int64{1000, 800}, []int64{})
	r.Dirs[0].Total = -1
	if moves := DecideDirs(map[int32]Report{1: r}, nil, dirCfg); len(moves) != 0 {
		t.Errorf("with a volume of unknown size: moves %v", moves)
	}
}

func TestDecideDirsSkipsAndRoom(t *testing.T) {
	r := dirsReport(10_000, []int64{0, 0}, []int64{1000, 800}, []int64{})
	skip := func(tp TopicPartition) bool { return tp.Partition == 0 } // being reassigned
	moves := DecideDirs(map[int32]Report{1: r}, skip, dirCfg)
	if len(moves) != 1 || moves[0].Partition != 1 {
		t.Fatalf("moves %v, want t-1 (t-0 is skipped)", moves)
	}
	// The destination's volume would pass the usage limit: no move.
	r = dirsReport(10_000, []int64{2000, 7500}, []int64{1000, 800}, []int64{})
	if moves := DecideDirs(map[int32]Report{1: r}, nil, dirCfg); len(moves) != 0 {
		t.Fatalf("onto a nearly full volume: %v", moves)
	}
	// A volume past the usage limit sheds to one with room, even when the
	// bytes alone are within the percentage.
	var rb ReportBuilder
	rb.Dir("/full", 10_000, 1000, false)
	rb.Replica("t", 0, 600, false)
	rb.Replica("t", 1, 500, false)
	rb.Dir("/roomy", 10_000, 9000, false)
	rb.Replica("t", 2, 1000, false)
	moves = DecideDirs(map[int32]Report{1: rb.Report()}, nil, dirCfg)
	if len(moves) != 1 || moves[0].From != "/full" {
		t.Fatalf("off a full volume: %v", moves)
	}
}

// TestDecideDirsSettles: applying each plan's move and deciding again
// ends, within as many steps as there are replicas, in a state with no
// move, every step narrowing the spread of bytes.
func TestDecideDirsSettles(t *testing.T) {
	r := dirsReport(1<<30, []int64{0, 0, 0}, []int64{900, 700, 650, 300, 220, 90, 40, 40}, []int64{10}, []int64{})
	for step := 0; ; step++ {
		moves := DecideDirs(map[int32]Report{1: r}, nil, dirCfg)
		if len(moves) == 0 {
			break
		}
		if step > 11 {
			t.Fatalf("still moving after %d steps: %v", step, moves)
		}
		before := dirBytes(r, nil)
		after := dirBytes(r, moves)
		if spreadOf(after) >= spreadOf(before) {
			t.Fatalf("step %d: %v widened the spread %v -> %v", step, moves, before, after)
		}
		r = applyDirMove(r, moves[0])
	}
	b := dirBytes(r, nil)
	if spreadOf(b) > 900 {
		t.Fatalf("settled at %v", b)
	}
}

func spreadOf(b map[string]int64) int64 {
	lo, hi := int64(1<<62), int64(0)
	for _, d := range []string{"/d0", "/d1", "/d2"} {
		lo, hi = min(lo, b[d]), max(hi, b[d])
	}
	return hi - lo
}

func applyDirMove(r Report, m DirMove) Report {
	tp := TopicPartition{m.Topic, m.Partition}
	for i := range r.Dirs {
		d := &r.Dirs[i]
		if d.Path == m.From {
			delete(d.Replicas, tp)
		}
		if d.Path == m.To {
			if d.Replicas == nil {
				d.Replicas = map[TopicPartition]int64{}
			}
			d.Replicas[tp] = m.Bytes
		}
	}
	return r
}
