package fetchsession

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func sentPartitions(n Next) []int32 {
	out := []int32{}
	for _, p := range n.Send {
		out = append(out, p.Partition)
	}
	return out
}

func forgotten(n Next) []int32 {
	out := []int32{}
	for _, k := range n.Forget {
		out = append(out, k.Partition)
	}
	slices.Sort(out)
	return out
}

// TestBuilderAgainstCache runs a follower's Builder against a leader's
// Cache: an idle follower sends no partitions, a moved offset sends one,
// a dropped partition is forgotten, and a session error starts over full.
func TestBuilderAgainstCache(t *testing.T) {
	c := New(10, DefaultEvictionMs, 3)
	b := NewBuilder()
	want := parts(0, 1, 2)
	exchange := func(want []Partition) (Next, Outcome) {
		t.Helper()
		n := b.Build(want)
		ctx := c.Begin(Request{SessionID: n.SessionID, Epoch: n.Epoch, Privileged: true, Partitions: n.Send, Forgotten: n.Forget})
		o := c.Complete(ctx, quiet(len(ctx.Read), 5), 0)
		code := o.ErrorCode
		if ctx.Kind == Failed {
			code = ctx.ErrorCode
		}
		b.Answered(code, o.SessionID)
		return n, o
	}

	n, o := exchange(want)
	if n.Epoch != InitialEpoch || len(n.Send) != 3 || o.SessionID == 0 {
		t.Fatalf("first fetch %+v answered %+v; want a full fetch opening a session", n, o)
	}
	n, _ = exchange(want)
	if n.SessionID != o.SessionID || n.Epoch != 1 || len(n.Send) != 0 || len(n.Forget) != 0 {
		t.Fatalf("idle fetch %+v; want epoch 1 carrying nothing", n)
	}
	want[1].FetchOffset = 7
	n, _ = exchange(want)
	if got := sentPartitions(n); !slices.Equal(got, []int32{1}) || n.Epoch != 2 {
		t.Fatalf("after partition 1 moved, sent %v at epoch %d", got, n.Epoch)
	}
	n, _ = exchange(want[:1])
	if got := forgotten(n); !slices.Equal(got, []int32{1, 2}) || len(n.Send) != 0 {
		t.Fatalf("dropping partitions 1, 2: forgot %v, sent %v", got, sentPartitions(n))
	}
	// The leader restarted: its cache lost the session.
	c = New(10, DefaultEvictionMs, 4)
	n, o = exchange(want[:1])
	if n.Epoch == InitialEpoch || o.ErrorCode != kerr.FetchSessionIDNotFound.Code || b.SessionID() != 0 {
		t.Fatalf("fetch into a lost session %+v answered %+v; builder session %d", n, o, b.SessionID())
	}
	n, o = exchange(want[:1])
	if n.Epoch != InitialEpoch || len(n.Send) != 1 || o.SessionID == 0 {
		t.Fatalf("after the session error %+v answered %+v; want a full fetch opening a new session", n, o)
	}
}

func TestBuilderAnsweredWithoutSession(t *testing.T) {
	b := NewBuilder()
	b.Build(parts(0))
	b.Answered(0, 0) // the leader's cache is full
	if n := b.Build(parts(0)); n.Epoch != InitialEpoch || len(n.Send) != 1 {
		t.Fatalf("want another full fetch, got %+v", n)
	}
	b.Answered(kerr.FetchSessionIDNotFound.Code, 0)
	if b.SessionID() != 0 {
		t.Fatal("session kept after an error")
	}
}

// TestBuilderOrderAndRepeats checks that what an incremental fetch sends
// and forgets does not depend on the order want names the partitions
// in (a round in the session's order compares in place, another looks
// each up), and that a partition named twice is still sent as changed
// and forgotten once.
func TestBuilderOrderAndRepeats(t *testing.T) {
	b := NewBuilder()
	round := func(want []Partition) Next {
		t.Helper()
		n := b.Build(want)
		b.Answered(0, 5)
		return n
	}
	want := parts(0, 1, 2, 3)
	round(want)
	if n := round(want); len(n.Send) != 0 || len(n.Forget) != 0 {
		t.Fatalf("idle round sent %v forgot %v", sentPartitions(n), forgotten(n))
	}
	reversed := slices.Clone(want)
	slices.Reverse(reversed)
	if n := round(reversed); len(n.Send) != 0 || len(n.Forget) != 0 {
		t.Fatalf("idle round in another order sent %v forgot %v", sentPartitions(n), forgotten(n))
	}
	reversed[1].FetchOffset = 9 // partition 2
	if n := round(reversed); !slices.Equal(sentPartitions(n), []int32{2}) || len(n.Forget) != 0 {
		t.Fatalf("partition 2 moved: sent %v forgot %v", sentPartitions(n), forgotten(n))
	}
	reversed[3].FetchOffset = 4 // partition 0, in the session's order now
	if n := round(reversed); !slices.Equal(sentPartitions(n), []int32{0}) || len(n.Forget) != 0 {
		t.Fatalf("partition 0 moved: sent %v forgot %v", sentPartitions(n), forgotten(n))
	}
	twice := append(slices.Clone(reversed[:2]), reversed[1])
	twice[2].FetchOffset = 10
	if n := round(twice); !slices.Equal(sentPartitions(n), []int32{2}) || !slices.Equal(forgotten(n), []int32{0, 1}) {
		t.Fatalf("partitions 3 and 2 (twice, moved): sent %v forgot %v", sentPartitions(n), forgotten(n))
	}
	if n := round(twice); !slices.Equal(sentPartitions(n), []int32{2}) || len(n.Forget) != 0 {
		// Partition 2 is held at offset 10 and named at 9 first.
		t.Fatalf("the same again: sent %v forgot %v", sentPartitions(n), forgotten(n))
	}
	if n := round(parts(3)); len(n.Send) != 0 || !slices.Equal(forgotten(n), []int32{2}) {
		t.Fatalf("partition 3 alone: sent %v forgot %v", sentPartitions(n), forgotten(n))
	}
}
