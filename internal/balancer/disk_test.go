package balancer

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

const gib = int64(1) << 30

var diskCfg = Config{MaxConcurrentMoves: 100, UnavailableTimeout: time.Minute, ImbalancePercent: 10,
	DiskImbalancePercent: 10, DiskMinImbalanceBytes: gib, MaxDiskUsagePercent: 80}

// withDisks gives every broker a disk of total bytes, of which used are
// taken (by its logs and anything else).
func withDisks(bs []Broker, total int64, used map[int32]int64) []Broker {
	bs = slices.Clone(bs)
	for i := range bs {
		bs[i].Disk = &Disk{Total: total, Usable: total - used[bs[i].ID]}
	}
	return bs
}

// sized is a fully in-sync partition whose every replica reports size.
func sized(topic string, idx int32, size int64, replicas ...int32) Partition {
	p := synced(topic, idx, replicas...)
	p.Sizes = map[int32]int64{}
	for _, r := range replicas {
		p.Sizes[r] = size
	}
	return p
}

// diskLoads is each broker's bytes after the plan's moves.
func diskLoads(ps []Partition, moves []Move) map[int32]int64 {
	out := map[int32]int64{}
	for i, rs := range replicasAfter(ps, moves) {
		for _, r := range rs {
			out[r] += maxSize(ps[i].Sizes)
		}
	}
	return out
}

// spread is the largest minus the smallest load among ids.
func spread(loads map[int32]int64, ids ...int32) int64 {
	lo, hi := loads[ids[0]], loads[ids[0]]
	for _, id := range ids {
		lo, hi = min(lo, loads[id]), max(hi, loads[id])
	}
	return hi - lo
}

// unevenDisks: 9 partitions of RF 1; broker 1 holds six of 10 GiB, 2
// and 3 hold 1 GiB each... so broker 1 has 60 GiB, 2 and 3 have 3 GiB:
// replica counts are even-ish (6, 3, 3 is within no threshold) but the
// bytes are not.
func unevenDisks() ([]Broker, []Partition) {
	var ps []Partition
	for i := range int32(6) {
		ps = append(ps, sized("big", i, 10*gib, 1))
	}
	for i := range int32(3) {
		ps = append(ps, sized("small", i, gib, 2), sized("small", i+3, gib, 3))
	}
	bs := withDisks(up(1, 2, 3), 1000*gib, map[int32]int64{1: 60 * gib, 2: 3 * gib, 3: 3 * gib})
	return bs, ps
}

func TestDiskUnevenMovesTowardEven(t *testing.T) {
	bs, ps := unevenDisks()
	p := Decide(bs, ps, diskCfg)
	assertSafe(t, ps, p)
	if len(p.Moves) == 0 {
		t.Fatal("no moves for uneven disks")
	}
	for _, m := range p.Moves {
		if m.Reason == DiskImbalance && (m.From != 1 || m.Bytes != 10*gib) {
			t.Errorf("disk move %v: want 10 GiB off broker 1", m)
		}
	}
	before, after := diskLoads(ps, nil), diskLoads(ps, p.Moves)
	if spread(after, 1, 2, 3) >= spread(before, 1, 2, 3) {
		t.Fatalf("loads %v -> %v: the spread did not narrow", before, after)
	}
	// 66 GiB over three brokers: 22 each is the mean; moves of 10 GiB
	// leave broker 1 with 20 or 30, never below the others by more than
	// the moved partition.
	if after[1] > 30*gib || after[2] > 30*gib || after[3] > 30*gib {
		t.Errorf("loads after %v: want none over 30 GiB", after)
	}
	// The plan converges: applied, it leaves nothing more to do for disks.
	bs2, ps2 := applyPlan(bs, ps, p)
	if again := Decide(bs2, ps2, diskCfg); len(again.Moves) != 0 {
		t.Errorf("after the plan, more moves: %v", again.Moves)
	}
}

// applyPlan is the view once the plan's moves completed: the new
// replicas hold the partitions' bytes, the old ones nothing.
func applyPlan(bs []Broker, ps []Partition, p Plan) ([]Broker, []Partition) {
	bs, ps = slices.Clone(bs), slices.Clone(ps)
	for _, m := range p.Moves {
		i := slices.IndexFunc(ps, func(q Partition) bool { return q.Topic == m.Topic && q.Index == m.Partition })
		q := ps[i]
		sizes := map[int32]int64{}
		for _, r := range m.Target {
			sizes[r] = m.Bytes
		}
		q.Replicas, q.ISR, q.Sizes = m.Target, slices.Clone(m.Target), sizes
		if !slices.Contains(m.Target, q.Leader) {
			q.Leader = m.Target[0]
		}
		ps[i] = q
		for j := range bs {
			d := *bs[j].Disk
			switch bs[j].ID {
			case m.From:
				d.Usable += m.Bytes
			case m.To:
				d.Usable -= m.Bytes
			}
			bs[j].Disk = &d
		}
	}
	return bs, ps
}

func TestDiskMovesAreBounded(t *testing.T) {
	bs, ps := unevenDisks()
	ps[len(ps)-1].Reassigning = true
	cfg := diskCfg
	cfg.MaxConcurrentMoves = 2
	p := Decide(bs, ps, cfg)
	if len(p.Moves) != 1 || p.InFlight != 1 {
		t.Fatalf("plan %+v: want 1 move (2 allowed, 1 in flight)", p)
	}
}

func TestDiskAlreadyBalancedMovesNothing(t *testing.T) {
	var ps []Partition
	for i := range int32(6) {
		ps = append(ps, sized("t", i, 10*gib, i%3+1, (i+1)%3+1))
	}
	bs := withDisks(up(1, 2, 3), 1000*gib, map[int32]int64{1: 40 * gib, 2: 40 * gib, 3: 40 * gib})
	if p := Decide(bs, ps, diskCfg); len(p.Moves) != 0 {
		t.Fatalf("balanced disks: moves %v", p.Moves)
	}
	// Within the threshold (23 vs 20 vs 20 GiB, the mean 21: under 10%
	// off), nothing moves either.
	ps = []Partition{sized("t", 0, 13*gib, 1), sized("t", 1, 10*gib, 1), sized("t", 2, 20*gib, 2), sized("t", 3, 20*gib, 3)}
	if p := Decide(bs, ps, diskCfg); len(p.Moves) != 0 {
		t.Fatalf("within the threshold: moves %v", p.Moves)
	}
}

func TestDiskSmallImbalanceBelowMinBytesStays(t *testing.T) {
	ps := []Partition{sized("t", 0, 300<<20, 1), sized("t", 1, 300<<20, 1), sized("t", 2, 1<<20, 2), sized("t", 3, 1<<20, 3)}
	bs := withDisks(up(1, 2, 3), 1000*gib, nil)
	if p := Decide(bs, ps, diskCfg); len(p.Moves) != 0 {
		t.Fatalf("600 MiB uneven, under the 1 GiB minimum: moves %v", p.Moves)
	}
	cfg := diskCfg
	cfg.DiskMinImbalanceBytes = 100 << 20
	if p := Decide(bs, ps, cfg); len(p.Moves) == 0 || p.Moves[0].From != 1 {
		t.Fatalf("over a 100 MiB minimum: moves %v, want the first off broker 1", p.Moves)
	}
}

func TestDiskRacksRespected(t *testing.T) {
	// Broker 1 (rack a) is full of partitions replicated on 1 and 2
	// (rack b); 3 is on rack a, 4 on rack b, both empty. Moving 1's
	// replica to 4 would put both on rack b: only 3 may take it.
	bs := withDisks([]Broker{{ID: 1, Rack: "a", Available: true}, {ID: 2, Rack: "b", Available: true},
		{ID: 3, Rack: "a", Available: true}, {ID: 4, Rack: "b", Available: true}}, 1000*gib, nil)
	var ps []Partition
	for i := range int32(4) {
		ps = append(ps, sized("t", i, 10*gib, 1, 2))
	}
	ps = append(ps, sized("u", 0, gib, 3, 4))
	p := Decide(bs, ps, diskCfg)
	assertSafe(t, ps, p)
	if len(p.Moves) == 0 {
		t.Fatal("no moves")
	}
	rack := map[int32]string{1: "a", 2: "b", 3: "a", 4: "b"}
	for _, m := range p.Moves {
		if rack[m.Target[0]] == rack[m.Target[1]] {
			t.Errorf("move %v puts both replicas on rack %s", m, rack[m.Target[0]])
		}
	}
}

func TestDiskNoMoveOntoFullBroker(t *testing.T) {
	// Broker 3 holds no partition but its disk is 79% used by something
	// else: a 10 GiB partition would take it over 80%, so it takes none,
	// for balance or to replace a gone broker.
	var ps []Partition
	for i := range int32(4) {
		ps = append(ps, sized("t", i, 10*gib, 1))
	}
	ps = append(ps, sized("g", 0, 10*gib, 2, 4))
	bs := withDisks(up(1, 2, 3, 4), 100*gib, map[int32]int64{1: 40 * gib, 2: 10 * gib, 3: 79 * gib, 4: 10 * gib})
	bs[3].Available, bs[3].UnavailableFor = false, time.Hour
	p := Decide(bs, ps, diskCfg)
	assertSafe(t, ps, p)
	for _, m := range p.Moves {
		if m.To == 3 {
			t.Errorf("move %v onto broker 3, which has no room", m)
		}
	}
	if !slices.ContainsFunc(p.Moves, func(m Move) bool { return m.From == 1 && m.To == 2 }) {
		t.Errorf("moves %v: want broker 1's bytes to go to broker 2", p.Moves)
	}
	// Every broker full: the gone broker's replica stays where it is.
	full := withDisks(up(1, 2, 3, 4), 100*gib, map[int32]int64{1: 79 * gib, 2: 79 * gib, 3: 79 * gib, 4: 10 * gib})
	full[3].Available, full[3].UnavailableFor = false, time.Hour
	if p := Decide(full, []Partition{sized("g", 0, 10*gib, 2, 4)}, diskCfg); len(p.Moves) != 0 {
		t.Fatalf("moves %v onto brokers without room", p.Moves)
	}
}

func TestDiskTooFullBrokerShedsReplicas(t *testing.T) {
	// Even loads by assignment, but broker 1's filesystem is 90% used
	// (other data): over the 80% maximum, so it sheds a replica to a
	// broker that has room.
	ps := []Partition{sized("t", 0, 10*gib, 1), sized("t", 1, 10*gib, 2), sized("t", 2, 10*gib, 3)}
	bs := withDisks(up(1, 2, 3), 100*gib, map[int32]int64{1: 90 * gib, 2: 10 * gib, 3: 10 * gib})
	p := Decide(bs, ps, diskCfg)
	if len(p.Moves) != 1 || p.Moves[0].From != 1 || p.Moves[0].Reason != DiskImbalance {
		t.Fatalf("moves %v: want one off the too-full broker 1", p.Moves)
	}
}

func TestDiskUnknownBrokerTakesNothing(t *testing.T) {
	bs, ps := unevenDisks()
	bs = append(bs, Broker{ID: 4, Available: true}) // joined, never reported
	p := Decide(bs, ps, diskCfg)
	for _, m := range p.Moves {
		if m.To == 4 {
			t.Errorf("move %v onto broker 4, whose disk is unknown", m)
		}
		if m.Reason == DiskImbalance {
			t.Errorf("disk move %v while a broker's disk is unknown", m)
		}
	}
}

func TestDiskCountMovesKeepDiskShare(t *testing.T) {
	// Broker 4 joined, empty: counts say move replicas to it; they go
	// smallest first, and disk balance moves the big ones to it too.
	_, ps := unevenDisks()
	bs := withDisks(up(1, 2, 3, 4), 1000*gib, map[int32]int64{1: 60 * gib, 2: 3 * gib, 3: 3 * gib})
	p := Decide(bs, ps, diskCfg)
	assertSafe(t, ps, p)
	after := diskLoads(ps, p.Moves)
	if spread(after, 1, 2, 3, 4) >= spread(diskLoads(ps, nil), 1, 2, 3, 4) || after[4] == 0 {
		t.Fatalf("loads after %v: %v", p.Moves, after)
	}
}

func TestReportsApply(t *testing.T) {
	var rb ReportBuilder
	rb.Dir("/a", 100, 40, false)
	rb.Dir("/b", 50, 10, true) // offline: not counted
	rb.Dir("/c", 100, 60, false)
	rb.Replica("t", 0, 7, false)
	rb.Replica("t", 1, 3, true) // a future log: a move under way, not a size
	r := rb.Report()
	if *r.Disk != (Disk{Total: 200, Usable: 100}) {
		t.Fatalf("disk %+v", *r.Disk)
	}
	if len(r.Sizes) != 1 || len(r.Dirs) != 2 || r.Dirs[1].Path != "/c" || r.Dirs[1].Replicas[TopicPartition{"t", 0}] != 7 ||
		len(r.Dirs[1].Futures) != 1 || len(r.Dirs[0].Replicas) != 0 {
		t.Fatalf("report %+v", r)
	}
	var unknown ReportBuilder
	unknown.Dir("/a", -1, -1, false)
	if unknown.Report().Disk != nil {
		t.Fatal("a directory of unknown size: disk should be unknown")
	}
	bs, ps := up(1, 2), []Partition{synced("t", 0, 1, 2)}
	Apply(bs, ps, map[int32]Report{1: r})
	if bs[0].Disk == nil || bs[1].Disk != nil || ps[0].Sizes[1] != 7 || len(ps[0].Sizes) != 1 {
		t.Fatalf("applied: %+v %+v", bs, ps)
	}
	loads := Loads(bs, ps)
	if loads[0].Bytes != 7 || loads[1].Bytes != 7 || loads[0].Replicas != 1 {
		t.Fatalf("loads %+v", loads)
	}
}

func TestDiskNoTradingPlaces(t *testing.T) {
	// 3 GiB against 2 GiB on broker 3 (just under the mean) with
	// partitions of about 1 GiB: a move would only swap who is fuller.
	ps := []Partition{sized("t", 0, gib, 1), sized("t", 1, gib, 1), sized("t", 2, gib-1<<20, 1),
		sized("t", 3, gib, 2), sized("t", 4, gib, 2), sized("t", 5, gib, 2), sized("t", 6, gib, 3), sized("t", 7, gib, 3)}
	bs := withDisks(up(1, 2, 3), 20*gib, nil)
	cfg := diskCfg
	cfg.DiskMinImbalanceBytes = 1 << 20
	if p := Decide(bs, ps, cfg); len(p.Moves) != 0 {
		t.Fatalf("moves %v would trade places", p.Moves)
	}
}

// Plans applied one after another always come to rest (no partition
// moving back and forth), within the bound each time, never filling a
// broker beyond the maximum usage.
func TestDiskPlansConverge(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		nb := 2 + rng.IntN(5)
		var ids []int32
		used := map[int32]int64{}
		for i := range nb {
			ids = append(ids, int32(i+1))
		}
		var ps []Partition
		for i := range 5 + rng.IntN(30) {
			size := rng.Int64N(8 * gib)
			rf := 1 + rng.IntN(min(3, nb))
			first := rng.IntN(1 + rng.IntN(nb)) // skewed to the low ids
			var rs []int32
			for j := range rf {
				b := ids[(first+j)%nb]
				used[b] += size
				rs = append(rs, b)
			}
			ps = append(ps, sized("t", int32(i), size, rs...))
		}
		bs := withDisks(up(ids...), 400*gib, used)
		racks := 1 + rng.IntN(3)
		for i := range bs {
			bs[i].Rack = string(rune('a' + i%racks))
		}
		cfg := diskCfg
		cfg.MaxConcurrentMoves = 3
		for round := 0; ; round++ {
			if round == 200 {
				t.Fatalf("seed %d: still moving after %d rounds", seed, round)
			}
			p := Decide(bs, ps, cfg)
			assertSafe(t, ps, p)
			if len(p.Moves) > 3 {
				t.Fatalf("seed %d: %d moves", seed, len(p.Moves))
			}
			if len(p.Moves) == 0 {
				break
			}
			rackOf := map[int32]string{}
			for _, b := range bs {
				rackOf[b.ID] = b.Rack
			}
			spanned := func(rs []int32) int {
				seen := map[string]bool{}
				for _, r := range rs {
					seen[rackOf[r]] = true
				}
				return len(seen)
			}
			for _, m := range p.Moves {
				i := slices.IndexFunc(ps, func(q Partition) bool { return q.Topic == m.Topic && q.Index == m.Partition })
				if spanned(m.Target) < spanned(ps[i].Replicas) {
					t.Fatalf("seed %d: move %v narrows %v's racks", seed, m, ps[i].Replicas)
				}
			}
			if round > 190 {
				t.Logf("seed %d round %d: %v loads %v", seed, round, p.Moves, diskLoads(ps, nil))
			}
			bs, ps = applyPlan(bs, ps, p)
			for _, b := range bs {
				if d := b.Disk; float64(d.Total-d.Usable) > float64(d.Total)*0.8 {
					t.Fatalf("seed %d: broker %d filled to %d of %d", seed, b.ID, d.Total-d.Usable, d.Total)
				}
			}
		}
	}
}
