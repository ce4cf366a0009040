package balancer

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// withCapacity sets the replica capacity of brokers by id.
func withCapacity(bs []Broker, caps map[int32]int) []Broker {
	bs = slices.Clone(bs)
	for i := range bs {
		bs[i].ReplicaCapacity = caps[bs[i].ID]
	}
	return bs
}

// listed is each broker's replica count as the controller checks a
// reassignment: every replica listed, those of a reassignment in progress
// on both sides.
func listed(ps []Partition) map[int32]int {
	out := map[int32]int{}
	for _, p := range ps {
		for _, r := range p.Replicas {
			out[r]++
		}
	}
	return out
}

// assertAccepted fails a plan with a move the controller would refuse
// for a broker's capacity: its count (listed, plus the plan's earlier
// moves onto it) would pass it.
func assertAccepted(t *testing.T, bs []Broker, ps []Partition, p Plan) {
	t.Helper()
	held := listed(ps)
	for _, m := range p.Moves {
		held[m.To]++
		for _, b := range bs {
			if b.ID == m.To && b.ReplicaCapacity > 0 && held[m.To] > b.ReplicaCapacity {
				t.Errorf("move %v takes broker %d to %d replicas, past its capacity %d", m, m.To, held[m.To], b.ReplicaCapacity)
			}
		}
	}
}

// A broker that joined with room for one replica takes one, where
// without a capacity it takes its share; the others go nowhere else
// (every other broker holds as many as the rest).
func TestCapacityFullBrokerIsNoTarget(t *testing.T) {
	ps := sixOnThree()
	free := Decide(up(1, 2, 3, 4), ps, cfg)
	if n := counts(ps, free.Moves)[4]; n < 2 {
		t.Fatalf("without a capacity broker 4 takes %d replicas (%v), want its share", n, free.Moves)
	}
	bs := withCapacity(up(1, 2, 3, 4), map[int32]int{4: 1})
	p := Decide(bs, ps, cfg)
	assertSafe(t, ps, p)
	assertAccepted(t, bs, ps, p)
	if n := counts(ps, p.Moves)[4]; n != 1 {
		t.Fatalf("moves %v put %d replicas on broker 4 of capacity 1, want 1", p.Moves, n)
	}
	// Full already: nothing moves onto it, and nothing else is uneven.
	bs = withCapacity(up(1, 2, 3, 4), map[int32]int{4: 1})
	ps = append(ps, synced("u", 0, 4))
	if p := Decide(bs, ps, cfg); len(p.Moves) != 0 {
		t.Fatalf("moves %v onto a full broker", p.Moves)
	}
}

// A gone broker's replicas go only to brokers with room; a full one is
// passed over although it is the least loaded.
func TestCapacityGoneBrokerReplacedOnBrokersWithRoom(t *testing.T) {
	ps := []Partition{synced("t", 0, 1, 3), synced("t", 1, 2, 3), synced("t", 2, 1, 2), synced("t", 3, 1, 2)}
	bs := up(1, 2, 3, 4)
	bs[2].Available, bs[2].UnavailableFor = false, time.Hour
	free := Decide(bs, ps, cfg)
	if len(free.Moves) != 2 || free.Moves[0].To != 4 || free.Moves[1].To != 4 {
		t.Fatalf("without a capacity the gone broker's replicas go to the empty broker 4: %v", free.Moves)
	}
	bs = withCapacity(bs, map[int32]int{4: 1, 1: 4, 2: 4})
	p := Decide(bs, ps, cfg)
	assertSafe(t, ps, p)
	assertAccepted(t, bs, ps, p)
	want := [][]int32{{1, 4}, {2, 1}, {1, 2}, {1, 2}}
	if got := replicasAfter(ps, p.Moves); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("moves %v give %v, want %v (broker 4 takes one, broker 1 the other)", p.Moves, got, want)
	}
}

// A broker holding more replicas than its capacity (it restarted with a
// lower open-files limit) has replicas moved off it before anything
// else, out-of-sync ones (those it leaves closed) first, until the
// planned moves bring it back to its capacity, and onto brokers with
// room only.
func TestCapacityOverCapacityBrokerDrainedFirst(t *testing.T) {
	var ps []Partition
	for i := range int32(6) {
		ps = append(ps, synced("t", i, 1, 2))
	}
	// Broker 1 left t-4 closed: out of its ISR.
	ps[4].ISR, ps[4].Leader = []int32{2}, 2
	// Brokers 3 and 4 are uneven too: count balance would move there.
	ps = append(ps, synced("u", 0, 3), synced("u", 1, 3), synced("u", 2, 3), synced("u", 3, 3))
	bs := withCapacity(up(1, 2, 3, 4), map[int32]int{1: 4, 4: 2})
	c := cfg
	c.MaxConcurrentMoves = 1
	p := Decide(bs, ps, c)
	if len(p.Moves) != 1 || p.Moves[0].Reason != OverCapacity || p.Moves[0].From != 1 || p.Moves[0].Partition != 4 || p.Moves[0].Topic != "t" {
		t.Fatalf("moves %v, want t-4's out-of-sync replica moved off broker 1 first", p.Moves)
	}
	p = Decide(bs, ps, cfg)
	assertSafe(t, ps, p)
	assertAccepted(t, bs, ps, p)
	drained := 0
	for _, m := range p.Moves {
		if m.Reason == OverCapacity {
			drained++
			if m.From != 1 {
				t.Errorf("move %v: only broker 1 is over its capacity", m)
			}
		}
	}
	if drained != 2 {
		t.Fatalf("moves %v drain %d replicas off broker 1 (6 of capacity 4), want 2", p.Moves, drained)
	}
	if n := counts(ps, p.Moves)[1]; n != 4 {
		t.Fatalf("moves %v leave broker 1 with %d replicas, want its capacity 4", p.Moves, n)
	}
	if n := counts(ps, p.Moves)[4]; n > 2 {
		t.Fatalf("moves %v leave broker 4 with %d replicas, past its capacity 2", p.Moves, n)
	}
}

// With every broker full, nothing moves: not a gone broker's replicas,
// not an over-capacity broker's, not for uneven counts or disks.
func TestCapacityEveryBrokerFullMovesNothing(t *testing.T) {
	ps := append(fiveFourThree(), synced("u", 0, 4, 1))
	bs := up(1, 2, 3, 4, 5)
	bs[3].Available, bs[3].UnavailableFor = false, time.Hour
	caps := map[int32]int{1: 3, 2: 4, 3: 3, 4: 1, 5: 0}
	// Broker 5 joined with nothing and states no limit: it takes.
	if p := Decide(withCapacity(bs, caps), ps, cfg); len(p.Moves) == 0 {
		t.Fatal("broker 5, empty and unlimited, takes nothing")
	}
	bs = bs[:4]
	bs = withCapacity(bs, caps)
	if p := Decide(bs, ps, cfg); len(p.Moves) != 0 {
		t.Fatalf("every broker is full (or over: broker 1), yet moves %v", p.Moves)
	}
	// Disks uneven as well: still nothing.
	bs = withDisks(bs, 100*gib, map[int32]int64{1: 70 * gib, 2: 10 * gib, 3: 10 * gib, 4: 10 * gib})
	if p := Decide(bs, ps, diskCfg); len(p.Moves) != 0 {
		t.Fatalf("every broker is full, yet moves %v", p.Moves)
	}
}

// randomView is a cluster of 2-6 brokers with partitions skewed to the
// low ids, some brokers unavailable.
func randomView(rng *rand.Rand) ([]Broker, []Partition) {
	nb := 2 + rng.IntN(5)
	var ids []int32
	for i := range nb {
		ids = append(ids, int32(i+1))
	}
	bs := up(ids...)
	for i := range bs {
		if rng.IntN(6) == 0 {
			bs[i].Available, bs[i].UnavailableFor = false, time.Duration(rng.IntN(2))*time.Hour
		}
		bs[i].Rack = string(rune('a' + i%(1+rng.IntN(3))))
	}
	var ps []Partition
	for i := range 5 + rng.IntN(30) {
		rf := 1 + rng.IntN(min(3, nb))
		first := rng.IntN(1 + rng.IntN(nb))
		var rs []int32
		for j := range rf {
			rs = append(rs, ids[(first+j)%nb])
		}
		p := synced("t", int32(i), rs...)
		if rf > 1 && rng.IntN(5) == 0 {
			p.ISR = p.ISR[:rf-1]
		}
		ps = append(ps, p)
	}
	return bs, ps
}

// Capacities no broker can reach plan exactly what no capacity plans.
func TestCapacityUnreachedChangesNothing(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 11))
		bs, ps := randomView(rng)
		free := Decide(bs, ps, cfg)
		caps := map[int32]int{}
		for _, b := range bs {
			caps[b.ID] = len(ps) + 1 + rng.IntN(3)
		}
		limited := Decide(withCapacity(bs, caps), ps, cfg)
		if !slices.EqualFunc(free.Moves, limited.Moves, func(a, b Move) bool { return a.String() == b.String() }) {
			t.Fatalf("seed %d: capacities %v out of reach change the plan %v into %v", seed, caps, free.Moves, limited.Moves)
		}
	}
}

// Plans applied one after another under random capacities (some below
// what a broker holds) never plan a move the controller would refuse,
// never add to a broker past its capacity, bring every available broker
// over its capacity down to it where the others have room, and come to
// rest.
func TestCapacityPlansConverge(t *testing.T) {
	drainedSome := false
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 13))
		bs, ps := randomView(rng)
		held := listed(ps)
		caps := map[int32]int{}
		for _, b := range bs {
			if rng.IntN(4) != 0 {
				caps[b.ID] = max(1, held[b.ID]+rng.IntN(5)-2)
			}
		}
		bs = withCapacity(bs, caps)
		c := cfg
		c.MaxConcurrentMoves = 3
		for round := 0; ; round++ {
			if round == 200 {
				t.Fatalf("seed %d: still moving after %d rounds", seed, round)
			}
			before := listed(ps)
			p := Decide(bs, ps, c)
			assertSafe(t, ps, p)
			assertAccepted(t, bs, ps, p)
			if len(p.Moves) == 0 {
				break
			}
			for _, m := range p.Moves {
				drainedSome = drainedSome || m.Reason == OverCapacity
			}
			// The moves complete: the targets replace the replicas.
			for _, m := range p.Moves {
				i := slices.IndexFunc(ps, func(q Partition) bool { return q.Topic == m.Topic && q.Index == m.Partition })
				q := ps[i]
				q.Replicas, q.ISR = m.Target, slices.Clone(m.Target)
				if !slices.Contains(m.Target, q.Leader) {
					q.Leader = m.Target[0]
				}
				ps[i] = q
			}
			after := listed(ps)
			for _, b := range bs {
				if b.ReplicaCapacity > 0 && after[b.ID] > b.ReplicaCapacity && after[b.ID] > before[b.ID] {
					t.Fatalf("seed %d: broker %d went from %d to %d replicas, past its capacity %d", seed, b.ID, before[b.ID], after[b.ID], b.ReplicaCapacity)
				}
			}
		}
		// At rest: a broker still over its capacity has no replica some
		// broker with room could take from it.
		s := newState(bs, ps, c)
		for _, from := range s.ids {
			if !s.overCapacity(from) {
				continue
			}
			for _, p := range s.on[from] {
				if !s.drainable(p, from) {
					continue
				}
				if to, ok := s.drainDestination(p, from); ok {
					t.Fatalf("seed %d: at rest broker %d holds %d replicas past its capacity %d, and broker %d could take %s-%d", seed, from, s.caps.held[from], bs[slices.IndexFunc(bs, func(b Broker) bool { return b.ID == from })].ReplicaCapacity, to, p.Topic, p.Index)
				}
			}
		}
	}
	if !drainedSome {
		t.Fatal("no plan drained a broker over its capacity: the views do not exercise it")
	}
}
