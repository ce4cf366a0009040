package balancer

import (
	"math/rand/v2"
	"testing"
)

// benchCluster is 48 brokers on 3 racks and 10,000 partitions of 3
// replicas, each a random size up to 1 GiB, the low ids holding more;
// stuck leaves every partition one replica out of its ISR, so that no
// balance move is possible and Decide looks at every pair of brokers.
func benchCluster(stuck bool) ([]Broker, []Partition) {
	rng := rand.New(rand.NewPCG(1, 2))
	const nb, np = 48, 10_000
	var bs []Broker
	for i := range nb {
		bs = append(bs, Broker{ID: int32(i + 1), Rack: string(rune('a' + i%3)), Available: true})
	}
	used := map[int32]int64{}
	var ps []Partition
	for i := range np {
		first := rng.IntN(1 + rng.IntN(nb))
		rs := []int32{int32(first%nb + 1), int32((first+1)%nb + 1), int32((first+2)%nb + 1)}
		p := sized("t", int32(i), rng.Int64N(gib), rs...)
		for _, r := range rs {
			used[r] += p.Sizes[r]
		}
		if stuck {
			p.ISR = rs[:2]
		}
		ps = append(ps, p)
	}
	return withDisks(bs, 100_000*gib, used), ps
}

// BenchmarkDecide: the "capacity" runs have every broker state a
// replica capacity well above what it holds, as every broker does by
// default (log.open.files.per.replica 1), so the counts are kept and
// checked but never bind.
func BenchmarkDecide(b *testing.B) {
	for _, run := range []struct {
		name         string
		stuck, limit bool
	}{{"moves", false, false}, {"stuck", true, false}, {"moves-capacity", false, true}, {"stuck-capacity", true, true}} {
		stuck := run.stuck
		b.Run(run.name, func(b *testing.B) {
			bs, ps := benchCluster(stuck)
			if run.limit {
				for i := range bs {
					bs[i].ReplicaCapacity = 100_000
				}
			}
			cfg := diskCfg
			cfg.MaxConcurrentMoves = 8
			for b.Loop() {
				p := Decide(bs, ps, cfg)
				if stuck != (len(p.Moves) == 0) {
					b.Fatalf("stuck %v: %d moves", stuck, len(p.Moves))
				}
			}
		})
	}
}
