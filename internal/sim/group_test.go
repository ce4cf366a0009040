package sim

import (
	"testing"
	"testing/cryptotest"
	"time"
)

// TestGroupOffsets runs seeds where a client commits and fetches group
// offsets while coordinators crash, lose power and get partitioned away:
// an acknowledged commit must survive every coordinator failover.
func TestGroupOffsets(t *testing.T) {
	commits := int64(0)
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run("", func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, seed)
			o := Options{Seed: seed, Nodes: 3, Partitions: 2, Duration: *flagDuration, Groups: true,
				Faults:    FaultMix{Every: 800 * time.Millisecond, Kill: true, PowerLoss: true, Partition: true, Pause: true},
				Producers: []ProducerSpec{{Acks: -1, Idempotent: true}}, Consumers: 1}
			o.Verbose = *flagSeed == seed
			o.Out = func(s string) { t.Log(s) }
			r := Run(o)
			report(t, r)
			commits += r.Stats.GroupCommits
		})
	}
	if commits == 0 {
		t.Fatal("no group commit was acknowledged in any run")
	}
}
