package logmove

import "testing"

func TestNext(t *testing.T) {
	cases := []struct {
		name string
		p    Progress
		want Step
	}{
		{"far behind copies", Progress{SrcStart: 0, SrcEnd: 100_000, FutEnd: 10}, Step{Copy, 10}},
		{"close behind pauses", Progress{SrcEnd: 100, FutEnd: 10}, Step{Kind: Pause}},
		{"caught up pauses first", Progress{SrcEnd: 100, FutEnd: 100}, Step{Kind: Pause}},
		{"paused copies the rest", Progress{SrcEnd: 100, FutEnd: 10, Paused: true}, Step{Copy, 10}},
		{"paused and caught up swaps", Progress{SrcEnd: 100, FutEnd: 100, Paused: true}, Step{Kind: Swap}},
		{"paused too far releases", Progress{SrcEnd: 100_000, FutEnd: 10, Paused: true}, Step{Kind: Release}},
		{"few offsets but many bytes behind copies", Progress{SrcEnd: 100, FutEnd: 10, BehindBytes: PauseLagBytes + 1}, Step{Copy, 10}},
		{"few bytes behind pauses", Progress{SrcEnd: 100, FutEnd: 10, BehindBytes: PauseLagBytes}, Step{Kind: Pause}},
		{"paused too many bytes behind releases", Progress{SrcEnd: 100, FutEnd: 10, Paused: true, BehindBytes: PauseLagBytes + 1}, Step{Kind: Release}},
		{"truncated below the copy", Progress{SrcEnd: 50, FutStart: 0, FutEnd: 80, Rewound: 40, HasRewound: true}, Step{Truncate, 40}},
		{"truncated above the copy is nothing", Progress{SrcEnd: 200_000, FutEnd: 80, Rewound: 90, HasRewound: true}, Step{Copy, 80}},
		{"restarted at its start resets", Progress{SrcStart: 500, SrcEnd: 500, FutStart: 0, FutEnd: 80, Rewound: 0, HasRewound: true}, Step{Reset, 500}},
		{"restarted lower resets", Progress{SrcStart: 5, SrcEnd: 5, FutStart: 10, FutEnd: 80, Rewound: 5, HasRewound: true}, Step{Reset, 5}},
		{"retention passed the copy", Progress{SrcStart: 300, SrcEnd: 100_000, FutStart: 0, FutEnd: 200}, Step{Reset, 300}},
		{"retention within the copy keeps it", Progress{SrcStart: 100, SrcEnd: 100_000, FutStart: 0, FutEnd: 200}, Step{Copy, 200}},
		{"future ahead truncates", Progress{SrcEnd: 50, FutEnd: 60}, Step{Truncate, 50}},
		{"scaled-down bounds copy what the defaults would pause for", Progress{SrcEnd: 100, FutEnd: 10, MaxPausedOffsets: 50}, Step{Copy, 10}},
		{"scaled-down bounds pause close behind", Progress{SrcEnd: 100, FutEnd: 60, MaxPausedOffsets: 50, MaxPausedBytes: 100, BehindBytes: 100}, Step{Kind: Pause}},
		{"scaled-down byte bound releases", Progress{SrcEnd: 100, FutEnd: 60, Paused: true, MaxPausedBytes: 100, BehindBytes: 101}, Step{Kind: Release}},
		{"head missing resets", Progress{SrcStart: 0, SrcEnd: 50, FutStart: 10, FutEnd: 50}, Step{Reset, 0}},
	}
	for _, c := range cases {
		if got := Next(c.p); got != c.want {
			t.Errorf("%s: Next(%+v) = %v %d, want %v %d", c.name, c.p, got.Kind, got.Offset, c.want.Kind, c.want.Offset)
		}
	}
}

func TestDecide(t *testing.T) {
	hosted := Replica{DirKnown: true, DirOnline: true, Exists: true, Hosted: true, CurrentDir: "/a"}
	with := func(r Replica, f func(*Replica)) Replica { f(&r); return r }
	cases := []struct {
		name string
		r    Replica
		dir  string
		want Outcome
	}{
		{"unknown dir", with(hosted, func(r *Replica) { r.DirKnown = false }), "/x", Outcome{Err: ErrLogDirNotFound}},
		{"offline dir", with(hosted, func(r *Replica) { r.DirOnline = false }), "/b", Outcome{Err: ErrStorage}},
		{"unknown partition", with(hosted, func(r *Replica) { r.Exists, r.Hosted = false, false }), "/b", Outcome{Err: ErrUnknownTopicOrPartition}},
		{"not hosted remembers", with(hosted, func(r *Replica) { r.Hosted = false }), "/b", Outcome{Err: ErrReplicaNotAvailable, Prefer: true, Dir: "/b"}},
		{"replica offline", with(hosted, func(r *Replica) { r.HostedOffline = true }), "/b", Outcome{Err: ErrStorage}},
		{"same dir is nothing", hosted, "/a", Outcome{Dir: "/a"}},
		{"same dir cancels a move", with(hosted, func(r *Replica) { r.FutureDir = "/b" }), "/a", Outcome{Cancel: true, Dir: "/a"}},
		{"start", hosted, "/b", Outcome{Start: true, Dir: "/b"}},
		{"already moving there", with(hosted, func(r *Replica) { r.FutureDir = "/b" }), "/b", Outcome{Dir: "/b"}},
		{"redirect", with(hosted, func(r *Replica) { r.FutureDir = "/c" }), "/b", Outcome{Cancel: true, Start: true, Dir: "/b"}},
		{"some dir offline", with(hosted, func(r *Replica) { r.AnyDirOffline = true }), "/b", Outcome{Err: ErrStorage}},
	}
	for _, c := range cases {
		if got := Decide(c.r, c.dir); got != c.want {
			t.Errorf("%s: Decide = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestRecover(t *testing.T) {
	fut := "/b/t-0.m1-future"
	cases := []struct {
		name  string
		found []Found
		want  []Fix
		err   bool
	}{
		{"undecided copy kept and resumed", []Found{{Root: "/a", Live: true}, {Root: "/b", Futures: []string{fut}}},
			[]Fix{{Kind: Resume, Dir: fut, To: "/b"}}, false},
		{"two undecided copies: the last kept", []Found{{Root: "/a", Live: true}, {Root: "/b", Futures: []string{fut}}, {Root: "/c", Futures: []string{"/c/t-0.m2-future"}}},
			[]Fix{{Kind: Discard, Dir: fut}, {Kind: Resume, Dir: "/c/t-0.m2-future", To: "/c"}}, false},
		{"decided, not renamed: finish", []Found{{Root: "/a", Live: true, Marker: fut}, {Root: "/b", Futures: []string{fut}}},
			[]Fix{{Kind: Promote, Dir: fut, To: "/b/t-0"}, {Kind: Retire, Dir: "/a/t-0"}}, false},
		{"renamed, old not retired", []Found{{Root: "/a", Live: true, Marker: fut}, {Root: "/b", Live: true}},
			[]Fix{{Kind: Retire, Dir: "/a/t-0"}}, false},
		{"marker without its future", []Found{{Root: "/a", Live: true, Marker: fut}},
			[]Fix{{Kind: Unmark, Dir: "/a/t-0"}}, false},
		{"no current log", []Found{{Root: "/b", Futures: []string{fut}}}, []Fix{{Kind: Discard, Dir: fut}}, false},
		{"two unmarked copies", []Found{{Root: "/a", Live: true}, {Root: "/b", Live: true}}, nil, true},
		{"nothing", []Found{{Root: "/a", Live: true}}, nil, false},
	}
	for _, c := range cases {
		got, err := Recover("t-0", c.found)
		if (err != nil) != c.err {
			t.Errorf("%s: err %v", c.name, err)
			continue
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
				break
			}
		}
	}
}

func TestReopen(t *testing.T) {
	cases := []struct {
		name string
		o    Opened
		want OnOpen
	}{
		{"nothing asked", Opened{CurrentDir: "/a"}, OnOpen{}},
		{"nothing asked, a future kept", Opened{CurrentDir: "/a", Kept: "/b/t-0.x-future", HasKept: true}, OnOpen{DiscardKept: true}},
		{"asked for where it is", Opened{CurrentDir: "/a", Preferred: "/a", HasPreferred: true}, OnOpen{}},
		{"blocked", Opened{CurrentDir: "/a", Preferred: "/b", HasPreferred: true, Kept: "/b/t-0.x-future", HasKept: true, Blocked: true}, OnOpen{DiscardKept: true}},
		{"resumed", Opened{CurrentDir: "/a", Preferred: "/b", HasPreferred: true, Kept: "/b/t-0.x-future", HasKept: true}, OnOpen{Resume: true, Dir: "/b"}},
		{"asked elsewhere than kept", Opened{CurrentDir: "/a", Preferred: "/c", HasPreferred: true, Kept: "/b/t-0.x-future", HasKept: true}, OnOpen{DiscardKept: true, Start: true, Dir: "/c"}},
		{"asked before it was hosted", Opened{CurrentDir: "/a", Preferred: "/b", HasPreferred: true}, OnOpen{Start: true, Dir: "/b"}},
	}
	for _, c := range cases {
		if got := Reopen(c.o); got != c.want {
			t.Errorf("%s: Reopen = %+v, want %+v", c.name, got, c.want)
		}
	}
}
