package fetchsession

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func key(p int32) Key { return Key{Name: "t", Partition: p} }

func parts(ps ...int32) []Partition {
	var out []Partition
	for _, p := range ps {
		out = append(out, Partition{Key: key(p), FetchOffset: 0, LogStartOffset: -1, MaxBytes: 1 << 20})
	}
	return out
}

func quiet(n int, hw int64) []Result {
	out := make([]Result, n)
	for i := range out {
		out[i] = Result{HighWatermark: hw, LastStableOffset: hw, LogStartOffset: 0}
	}
	return out
}

func readKeys(ctx Context) []int32 {
	var out []int32
	for _, p := range ctx.Read {
		out = append(out, p.Partition)
	}
	return out
}

func included(ctx Context, o Outcome) []int32 {
	out := []int32{}
	for i, in := range o.Include {
		if in {
			out = append(out, ctx.Read[i].Partition)
		}
	}
	return out
}

// open creates a session over partitions ps and returns its id.
func open(t *testing.T, c *Cache, privileged bool, now int64, ps ...int32) int32 {
	t.Helper()
	ctx := c.Begin(Request{Epoch: InitialEpoch, Privileged: privileged, Partitions: parts(ps...), NowMs: now})
	o := c.Complete(ctx, quiet(len(ps), 5), now)
	if o.SessionID == 0 {
		t.Fatalf("no session created for %v", ps)
	}
	return o.SessionID
}

func TestCacheLifecycle(t *testing.T) {
	type step struct {
		name      string
		req       func(id int32) Request
		results   func(n int) []Result
		wantKind  Kind
		wantErr   int16
		wantRead  []int32
		wantSent  []int32 // partitions the answer carries
		wantNewID bool    // the answer names a session
	}
	steps := []step{
		{
			name:     "epoch -1 is a sessionless full fetch (kafka-go's session -1)",
			req:      func(int32) Request { return Request{SessionID: -1, Epoch: FinalEpoch, Partitions: parts(0, 1)} },
			wantKind: Sessionless, wantRead: []int32{0, 1}, wantSent: []int32{0, 1},
		},
		{
			name:     "epoch 0 creates a session",
			req:      func(int32) Request { return Request{Epoch: InitialEpoch, Partitions: parts(0, 1, 2)} },
			wantKind: Full, wantRead: []int32{0, 1, 2}, wantSent: []int32{0, 1, 2}, wantNewID: true,
		},
		{
			name:     "an idle incremental fetch reads everything and answers nothing",
			req:      func(id int32) Request { return Request{SessionID: id, Epoch: 1} },
			wantKind: Incremental, wantRead: []int32{0, 1, 2}, wantSent: []int32{}, wantNewID: true,
		},
		{
			name: "only the partition whose high watermark moved is answered",
			req:  func(id int32) Request { return Request{SessionID: id, Epoch: 2} },
			results: func(n int) []Result {
				r := quiet(n, 5)
				r[1].HighWatermark, r[1].LastStableOffset, r[1].HasRecords = 9, 9, true
				return r
			},
			wantKind: Incremental, wantRead: []int32{0, 1, 2}, wantSent: []int32{1}, wantNewID: true,
		},
		{
			name: "answered partitions move to the end; a new one is added; one is forgotten",
			req: func(id int32) Request {
				return Request{SessionID: id, Epoch: 3, Partitions: parts(3), Forgotten: []Key{key(0)}}
			},
			results: func(n int) []Result {
				// Read order is 2, 1, 3: partition 1 was answered last time.
				r := quiet(n, 5)
				r[1].HighWatermark, r[1].LastStableOffset = 9, 9
				r[2].HighWatermark, r[2].LastStableOffset = 0, 0
				return r
			},
			wantKind: Incremental, wantRead: []int32{2, 1, 3}, wantSent: []int32{3}, wantNewID: true,
		},
		{
			name:     "a replayed epoch is refused",
			req:      func(id int32) Request { return Request{SessionID: id, Epoch: 3} },
			wantKind: Failed, wantErr: kerr.InvalidFetchSessionEpoch.Code,
		},
		{
			name: "an error is always answered",
			req:  func(id int32) Request { return Request{SessionID: id, Epoch: 4} },
			results: func(n int) []Result {
				r := quiet(n, 5)
				r[1].HighWatermark, r[1].LastStableOffset = 9, 9
				r[2].HighWatermark, r[2].LastStableOffset = 0, 0
				r[0].Failed = true
				return r
			},
			wantKind: Incremental, wantRead: []int32{2, 1, 3}, wantSent: []int32{2}, wantNewID: true,
		},
		{
			name:     "a topic-id fetch cannot continue a by-name session",
			req:      func(id int32) Request { return Request{SessionID: id, Epoch: 5, UsesTopicIDs: true} },
			wantKind: Failed, wantErr: kerr.FetchSessionTopicIDError.Code,
		},
		{
			name: "forgetting every partition ends the session",
			req: func(id int32) Request {
				return Request{SessionID: id, Epoch: 5, Forgotten: []Key{key(1), key(2), key(3)}}
			},
			wantKind: Sessionless, wantRead: nil, wantSent: []int32{},
		},
		{
			name:     "the ended session is gone",
			req:      func(id int32) Request { return Request{SessionID: id, Epoch: 6} },
			wantKind: Failed, wantErr: kerr.FetchSessionIDNotFound.Code,
		},
	}
	c := New(10, DefaultEvictionMs, 1)
	var id int32
	for i, st := range steps {
		now := int64(i * 1000)
		req := st.req(id)
		req.NowMs = now
		ctx := c.Begin(req)
		if ctx.Kind != st.wantKind || ctx.ErrorCode != st.wantErr {
			t.Fatalf("%s: kind %v error %d, want %v %d", st.name, ctx.Kind, ctx.ErrorCode, st.wantKind, st.wantErr)
		}
		if ctx.Kind == Failed {
			continue
		}
		if got := readKeys(ctx); !slices.Equal(got, st.wantRead) {
			t.Fatalf("%s: reads %v, want %v", st.name, got, st.wantRead)
		}
		res := quiet(len(ctx.Read), 5)
		if st.results != nil {
			res = st.results(len(ctx.Read))
		}
		o := c.Complete(ctx, res, now)
		if o.ErrorCode != 0 {
			t.Fatalf("%s: complete error %d", st.name, o.ErrorCode)
		}
		if got := included(ctx, o); !slices.Equal(got, st.wantSent) {
			t.Fatalf("%s: answers %v, want %v", st.name, got, st.wantSent)
		}
		if (o.SessionID != 0) != st.wantNewID {
			t.Fatalf("%s: session id %d", st.name, o.SessionID)
		}
		if ctx.Kind == Full {
			id = o.SessionID
		} else if ctx.Kind == Incremental && o.SessionID != id {
			t.Fatalf("%s: session id changed %d -> %d", st.name, id, o.SessionID)
		}
	}
}

func TestCacheFullFetchClosesNamedSession(t *testing.T) {
	c := New(10, DefaultEvictionMs, 1)
	id := open(t, c, false, 0, 0)
	ctx := c.Begin(Request{SessionID: id, Epoch: InitialEpoch, Partitions: parts(0)})
	o := c.Complete(ctx, quiet(1, 5), 0)
	if o.SessionID == id || o.SessionID == 0 {
		t.Fatalf("new session id %d (old %d)", o.SessionID, id)
	}
	if ctx := c.Begin(Request{SessionID: id, Epoch: 1}); ctx.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("old session still served: %+v", ctx)
	}
	if c.Len() != 1 {
		t.Fatalf("%d sessions, want 1", c.Len())
	}
}

func TestCacheConcurrentFetchOfOneSession(t *testing.T) {
	c := New(10, DefaultEvictionMs, 1)
	id := open(t, c, false, 0, 0)
	first := c.Begin(Request{SessionID: id, Epoch: 1})
	// A second fetch at the next epoch runs before the first completes.
	second := c.Begin(Request{SessionID: id, Epoch: 2})
	if second.Kind != Incremental {
		t.Fatalf("second fetch: %+v", second)
	}
	if o := c.Complete(first, quiet(1, 5), 0); o.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("stale completion answered %+v", o)
	}
	if o := c.Complete(second, quiet(1, 5), 0); o.ErrorCode != 0 || o.SessionID != id {
		t.Fatalf("current completion answered %+v", o)
	}
}

func TestCacheEviction(t *testing.T) {
	const ev = DefaultEvictionMs
	cases := []struct {
		name string
		// existing sessions: privileged, partitions, created (and last used) at
		existing []struct {
			priv bool
			n    int
			at   int64
		}
		newPriv  bool
		newN     int
		now      int64
		wantMade bool
		wantGone int // index into existing evicted, -1 none
	}{
		{
			name: "a stale session is evicted first, whatever its strength",
			existing: []struct {
				priv bool
				n    int
				at   int64
			}{{false, 1, 100}, {true, 50, 0}},
			newPriv: false, newN: 1, now: ev + 1, wantMade: true, wantGone: 1,
		},
		{
			name: "no stale session: a consumer cannot evict a young session",
			existing: []struct {
				priv bool
				n    int
				at   int64
			}{{false, 1, 10}, {false, 2, 20}},
			newPriv: false, newN: 100, now: 30, wantMade: false, wantGone: -1,
		},
		{
			name: "a follower evicts a young consumer session, the smallest",
			existing: []struct {
				priv bool
				n    int
				at   int64
			}{{false, 5, 10}, {false, 2, 20}, {true, 1, 30}},
			newPriv: true, newN: 1, now: 40, wantMade: true, wantGone: 1,
		},
		{
			name: "a follower cannot evict a young follower session",
			existing: []struct {
				priv bool
				n    int
				at   int64
			}{{true, 1, 10}},
			newPriv: true, newN: 100, now: 40, wantMade: false, wantGone: -1,
		},
		{
			name: "an old session is evicted by a larger one of the same kind",
			existing: []struct {
				priv bool
				n    int
				at   int64
			}{{false, 3, 0}, {false, 2, 0}},
			// Both used recently (not stale), created long ago.
			newPriv: false, newN: 3, now: ev + 10, wantMade: true, wantGone: 1,
		},
		{
			name: "an equal one is not evicted",
			existing: []struct {
				priv bool
				n    int
				at   int64
			}{{false, 2, 0}},
			newPriv: false, newN: 2, now: ev + 10, wantMade: false, wantGone: -1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New(len(tc.existing), ev, 7)
			ids := make([]int32, len(tc.existing))
			for i, e := range tc.existing {
				ps := make([]int32, e.n)
				for p := range ps {
					ps[p] = int32(p)
				}
				ids[i] = open(t, c, e.priv, e.at, ps...)
			}
			// Keep the sessions created long ago in use, so only the
			// first case has a stale one.
			if tc.name != "a stale session is evicted first, whatever its strength" {
				for i, e := range tc.existing {
					if tc.now-e.at > ev {
						ctx := c.Begin(Request{SessionID: ids[i], Epoch: 1, NowMs: tc.now - 1})
						c.Complete(ctx, quiet(len(ctx.Read), 5), tc.now-1)
					}
				}
			}
			ps := make([]int32, tc.newN)
			for p := range ps {
				ps[p] = int32(p)
			}
			ctx := c.Begin(Request{Epoch: InitialEpoch, Privileged: tc.newPriv, Partitions: parts(ps...), NowMs: tc.now})
			o := c.Complete(ctx, quiet(len(ps), 5), tc.now)
			if (o.SessionID != 0) != tc.wantMade {
				t.Fatalf("session made: %v, want %v", o.SessionID != 0, tc.wantMade)
			}
			if want := uint64(0); tc.wantGone >= 0 && c.Evictions() != 1 || tc.wantGone < 0 && c.Evictions() != want {
				t.Fatalf("evictions %d", c.Evictions())
			}
			for i, id := range ids {
				_, present := c.sessions[id]
				if gone := !present; gone != (i == tc.wantGone) {
					t.Fatalf("session %d (%+v) gone: %v, want %v", i, tc.existing[i], gone, i == tc.wantGone)
				}
			}
		})
	}
}

func TestCacheZeroSlotsMakesNoSession(t *testing.T) {
	c := New(0, DefaultEvictionMs, 1)
	ctx := c.Begin(Request{Epoch: InitialEpoch, Partitions: parts(0)})
	if o := c.Complete(ctx, quiet(1, 5), 0); o.SessionID != 0 || !slices.Equal(o.Include, []bool{true}) {
		t.Fatalf("got %+v", o)
	}
}

func TestNextEpochWraps(t *testing.T) {
	if got := nextEpoch(1<<31 - 1); got != 1 {
		t.Fatalf("nextEpoch(max) = %d", got)
	}
}
