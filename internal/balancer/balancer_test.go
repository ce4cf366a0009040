package balancer

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

var cfg = Config{MaxConcurrentMoves: 100, UnavailableTimeout: time.Minute, ImbalancePercent: 10}

func up(ids ...int32) []Broker {
	var bs []Broker
	for _, id := range ids {
		bs = append(bs, Broker{ID: id, Available: true})
	}
	return bs
}

// synced is a fully in-sync partition led by its first replica.
func synced(topic string, idx int32, replicas ...int32) Partition {
	return Partition{Topic: topic, Index: idx, Replicas: replicas, ISR: slices.Clone(replicas), Leader: replicas[0]}
}

// sixOnThree is 6 partitions of RF 2 spread over brokers 1..3 (4 replicas
// each).
func sixOnThree() []Partition {
	return []Partition{
		synced("t", 0, 1, 2), synced("t", 1, 2, 3), synced("t", 2, 3, 1),
		synced("t", 3, 1, 2), synced("t", 4, 2, 3), synced("t", 5, 3, 1),
	}
}

// replicasAfter is each partition's replica list once moves are done.
func replicasAfter(ps []Partition, moves []Move) [][]int32 {
	target := map[string][]int32{}
	for _, m := range moves {
		target[m.Topic+"/"+fmt.Sprint(m.Partition)] = m.Target
	}
	out := make([][]int32, len(ps))
	for i, p := range ps {
		out[i] = p.Replicas
		if t, ok := target[p.Topic+"/"+fmt.Sprint(p.Index)]; ok {
			out[i] = t
		}
	}
	return out
}

// counts is each broker's replica count after the plan's moves.
func counts(ps []Partition, moves []Move) map[int32]int {
	out := map[int32]int{}
	for _, rs := range replicasAfter(ps, moves) {
		for _, r := range rs {
			out[r]++
		}
	}
	return out
}

// fiveFourThree is 12 partitions of RF 1: 5 on broker 1, 4 on 2, 3 on 3.
func fiveFourThree() []Partition {
	var ps []Partition
	for i, b := range []int32{1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3} {
		ps = append(ps, synced("t", int32(i), b))
	}
	return ps
}

func TestDecide(t *testing.T) {
	gone := func(bs []Broker, id int32, d time.Duration) []Broker {
		bs = slices.Clone(bs)
		for i := range bs {
			if bs[i].ID == id {
				bs[i].Available, bs[i].UnavailableFor = false, d
			}
		}
		return bs
	}
	withISR := func(ps []Partition, idx int, isr ...int32) []Partition {
		ps = slices.Clone(ps)
		ps[idx].ISR = isr
		return ps
	}
	for _, tc := range []struct {
		name       string
		brokers    []Broker
		partitions []Partition
		cfg        Config
		// check inspects the plan; want is the String of every move, in
		// order, when check is nil.
		want  []string
		check func(t *testing.T, p Plan, ps []Partition)
	}{
		{
			name: "balanced: nothing to do", brokers: up(1, 2, 3), partitions: sixOnThree(), cfg: cfg,
		},
		{
			name: "a joining broker gets its share", brokers: up(1, 2, 3, 4), partitions: sixOnThree(), cfg: cfg,
			check: func(t *testing.T, p Plan, ps []Partition) {
				c := counts(ps, p.Moves)
				if c[4] != 3 || c[1] != 3 || c[2] != 3 || c[3] != 3 {
					t.Fatalf("counts after %v = %v, want 3 each", p.Moves, c)
				}
				for _, m := range p.Moves {
					if m.To != 4 || m.Reason != Imbalance {
						t.Errorf("move %v: want a move to 4 for imbalance", m)
					}
				}
			},
		},
		{
			name:    "moves are bounded by max concurrent moves, counting those in flight",
			brokers: up(1, 2, 3, 4),
			partitions: func() []Partition {
				ps := sixOnThree()
				ps[5].Reassigning = true
				return ps
			}(),
			cfg: Config{MaxConcurrentMoves: 2, UnavailableTimeout: time.Minute, ImbalancePercent: 10},
			check: func(t *testing.T, p Plan, _ []Partition) {
				if len(p.Moves) != 1 || p.InFlight != 1 {
					t.Fatalf("plan %+v: want 1 move (2 allowed, 1 in flight)", p)
				}
				if p.Moves[0].Partition == 5 {
					t.Errorf("moved the partition being reassigned: %v", p.Moves[0])
				}
			},
		},
		{
			name: "no move at all when the bound is reached", brokers: up(1, 2, 3, 4),
			partitions: func() []Partition {
				ps := sixOnThree()
				ps[0].Reassigning, ps[1].Reassigning = true, true
				return ps
			}(),
			cfg: Config{MaxConcurrentMoves: 2, UnavailableTimeout: time.Minute, ImbalancePercent: 10},
		},
		{
			name:    "a broker unavailable for less than the timeout keeps its replicas",
			brokers: gone(up(1, 2, 3, 4), 3, 59*time.Second), partitions: []Partition{
				synced("t", 0, 1, 3), synced("t", 1, 2, 4),
			}, cfg: cfg,
		},
		{
			name:    "a broker unavailable past the timeout loses its replicas, even under-replicated",
			brokers: gone(up(1, 2, 3, 4), 3, time.Minute), partitions: withISR([]Partition{
				synced("t", 0, 1, 3), synced("t", 1, 3, 2),
			}, 1, 2),
			cfg: cfg,
			want: []string{
				"t-0: move replica 3 -> 4 (target [1 4], broker unavailable)",
				"t-1: move replica 3 -> 1 (target [1 2], broker unavailable)",
			},
		},
		{
			name:    "never removes the last in-sync replica",
			brokers: gone(up(1, 2, 3), 3, time.Hour), partitions: withISR([]Partition{
				synced("t", 0, 3, 1),
			}, 0, 3),
			cfg: cfg,
		},
		{
			name:    "under-replicated partitions are not moved for balance",
			brokers: up(1, 2, 3, 4), partitions: withISR([]Partition{
				synced("t", 0, 1, 2), synced("t", 1, 1, 2),
			}, 0, 1),
			cfg:  cfg,
			want: []string{"t-1: move replica 1 -> 3 (target [3 2], replica imbalance)"},
		},
		{
			name: "racks: the replacement keeps the partition on two racks",
			brokers: func() []Broker {
				bs := gone([]Broker{{ID: 1, Rack: "a", Available: true}, {ID: 2, Rack: "b", Available: true},
					{ID: 3, Rack: "a", Available: true}, {ID: 4, Rack: "b", Available: true}}, 2, time.Hour)
				return bs
			}(),
			partitions: []Partition{synced("t", 0, 1, 2), synced("t", 1, 3, 4), synced("t", 2, 3, 4)},
			cfg:        cfg,
			want:       []string{"t-0: move replica 2 -> 4 (target [1 4], broker unavailable)"},
		},
		{
			name: "racks: a balance move never puts two replicas on one rack",
			brokers: []Broker{{ID: 1, Rack: "a", Available: true}, {ID: 2, Rack: "b", Available: true},
				{ID: 3, Rack: "b", Available: true}},
			partitions: []Partition{synced("t", 0, 1, 2), synced("t", 1, 1, 2), synced("t", 2, 1, 2), synced("t", 3, 1, 2)},
			cfg:        cfg,
			check: func(t *testing.T, p Plan, _ []Partition) {
				for _, m := range p.Moves {
					if m.From != 2 {
						t.Errorf("move %v takes a replica off rack a's only broker", m)
					}
				}
				if len(p.Moves) != 2 {
					t.Errorf("moves %v: want 2 (broker 2 -> 3)", p.Moves)
				}
			},
		},
		{
			name:    "small differences within the threshold stay",
			brokers: up(1, 2, 3), partitions: fiveFourThree(),
			cfg: Config{MaxConcurrentMoves: 10, UnavailableTimeout: time.Minute, ImbalancePercent: 50},
		},
		{
			name:    "differences over the threshold move one replica",
			brokers: up(1, 2, 3), partitions: fiveFourThree(), cfg: cfg,
			want: []string{"t-0: move replica 1 -> 3 (target [3], replica imbalance)"},
		},
		{
			name:    "preferred leaders are elected when in sync and available",
			brokers: up(1, 2), partitions: []Partition{
				{Topic: "t", Index: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 2},
				{Topic: "t", Index: 1, Replicas: []int32{2, 1}, ISR: []int32{1}, Leader: 1},
			},
			cfg: cfg,
			check: func(t *testing.T, p Plan, _ []Partition) {
				if len(p.Elections) != 1 || p.Elections[0].String() != "t-0: elect preferred leader 1 (now 2)" {
					t.Fatalf("elections %v", p.Elections)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.brokers, tc.partitions, tc.cfg)
			assertSafe(t, tc.partitions, p)
			if tc.check != nil {
				tc.check(t, p, tc.partitions)
				return
			}
			var got []string
			for _, m := range p.Moves {
				got = append(got, m.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("moves:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// assertSafe checks what every plan must keep: one move per partition,
// none of a partition being reassigned, each target keeps the replication
// factor with distinct replicas; a gone broker's replica is replaced only
// while another in-sync replica stays, a balance move only of a fully
// in-sync partition.
func assertSafe(t *testing.T, ps []Partition, p Plan) {
	t.Helper()
	seen := map[string]bool{}
	for _, m := range p.Moves {
		key := m.Topic + "/" + fmt.Sprint(m.Partition)
		if seen[key] {
			t.Errorf("two moves of %s", key)
		}
		seen[key] = true
		i := slices.IndexFunc(ps, func(q Partition) bool { return q.Topic == m.Topic && q.Index == m.Partition })
		q := ps[i]
		if q.Reassigning {
			t.Errorf("move %v of a partition being reassigned", m)
		}
		if len(m.Target) != len(q.Replicas) {
			t.Errorf("move %v changes the replication factor of %v", m, q.Replicas)
		}
		for j, r := range m.Target {
			if slices.Contains(m.Target[:j], r) {
				t.Errorf("move %v lists %d twice", m, r)
			}
		}
		switch m.Reason {
		case BrokerGone:
			if !slices.ContainsFunc(m.Target, func(r int32) bool { return slices.Contains(q.ISR, r) }) {
				t.Errorf("move %v leaves no in-sync replica of ISR %v", m, q.ISR)
			}
		case Imbalance:
			if len(q.ISR) != len(q.Replicas) {
				t.Errorf("balance move %v of an under-replicated partition (ISR %v)", m, q.ISR)
			}
		}
	}
}

func TestDecideIsDeterministic(t *testing.T) {
	ps := sixOnThree()
	a := Decide(up(4, 3, 2, 1), ps, cfg)
	rev := slices.Clone(ps)
	slices.Reverse(rev)
	b := Decide(up(1, 2, 3, 4), rev, cfg)
	if len(a.Moves) != len(b.Moves) {
		t.Fatalf("%v != %v", a.Moves, b.Moves)
	}
	for i := range a.Moves {
		if a.Moves[i].String() != b.Moves[i].String() {
			t.Fatalf("%v != %v", a.Moves, b.Moves)
		}
	}
}
