package sim

import (
	"flag"
	"testing"
	"testing/cryptotest"
	"time"
)

var (
	flagSeeds    = flag.Int("sim.seeds", 200, "how many seeds TestSeeds runs (seeds 1..N, swarm fault mixes; 50 with -short)")
	flagSeed     = flag.Uint64("sim.seed", 0, "run only this seed, printing its whole trace with -v")
	flagDuration = flag.Duration("sim.duration", 10*time.Second, "simulated length of each run's faulty phase")
)

// runSeed runs one swarm seed. etcd raft draws its election jitter from
// crypto/rand; cryptotest makes that stream a function of the seed too.
func runSeed(t *testing.T, seed uint64, verbose bool) Result {
	cryptotest.SetGlobalRandom(t, seed)
	o := Swarm(seed, *flagDuration)
	o.Verbose = verbose
	o.Out = func(s string) { t.Log(s) }
	return Run(o)
}

// TestSeeds runs many seeds; a failing one prints its seed, the options
// the swarm chose and the events that led to the violation.
func TestSeeds(t *testing.T) {
	if *flagSeed != 0 {
		t.Run("seed", func(t *testing.T) {
			r := runSeed(t, *flagSeed, testing.Verbose())
			report(t, r)
		})
		return
	}
	seeds := *flagSeeds
	if testing.Short() {
		seeds = min(seeds, 50)
	}
	var simulated time.Duration
	var steps int64
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		var r Result
		t.Run("", func(t *testing.T) {
			r = runSeed(t, seed, false)
			report(t, r)
		})
		simulated += r.SimTime
		steps += r.Steps
	}
	t.Logf("%d seeds, %v simulated, %d events", seeds, simulated, steps)
}

func report(t *testing.T, r Result) {
	t.Helper()
	if len(r.Violations) > 0 {
		t.Fatal(r.Failure())
	}
	t.Logf("seed %d: %v simulated, %d events, trace %016x, %+v", r.Seed, r.SimTime, r.Steps, r.TraceHash, r.Stats)
}

// TestDeterminism runs seeds twice and compares complete traces: any
// dependence on map order, the real clock or goroutine scheduling shows.
func TestDeterminism(t *testing.T) {
	var acked int64
	for _, seed := range []uint64{3, 7, 11} {
		var a, b Result
		t.Run("first", func(t *testing.T) { a = runSeed(t, seed, false) })
		t.Run("second", func(t *testing.T) { b = runSeed(t, seed, false) })
		if a.TraceHash != b.TraceHash || a.Steps != b.Steps || a.SimTime != b.SimTime {
			t.Fatalf("seed %d is not deterministic: hashes %x / %x, steps %d / %d\nfirst:\n%s\nsecond:\n%s",
				seed, a.TraceHash, b.TraceHash, a.Steps, b.Steps, a.Trace, b.Trace)
		}
		acked += a.Stats.Acked
	}
	if acked == 0 {
		t.Fatal("the runs acknowledged nothing; they did not exercise the cluster")
	}
}

// TestBitFlips runs seeds whose only faults are flipped bits in stored
// batches, with crashes to make recovery read them.
func TestBitFlips(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run("", func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, seed)
			o := Swarm(seed, *flagDuration)
			o.Faults = FaultMix{Every: time.Second, BitFlip: true, Kill: true}
			o.Verbose = *flagSeed == seed
			o.Out = func(s string) { t.Log(s) }
			report(t, Run(o))
		})
	}
}

// TestRegressions replays seeds that found bugs, with the options they
// ran with when they did.
//
// Seeds 3, 9, 28 (found first as seed 22, before the swarm changed): a replica that led an epoch without appending kept that epoch
// in its cache after losing leadership; as a follower it named it as its
// last fetched epoch, the leader (which never had it) answered "diverging"
// and reconciliation found nothing to cut, forever: the replica never
// rejoined the ISR. Fixed in storage.Log.Truncate (truncating at the log
// end drops epochs that start there).
func TestRegressions(t *testing.T) {
	for _, seed := range []uint64{3, 9, 28} {
		t.Run("", func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, seed)
			report(t, Run(Swarm(seed, 10*time.Second)))
		})
	}
}

// TestRegressionFollowerAppendFailure replays seeds of a disk-full mix that
// found a follower reporting unsynced batches as held: a fetch response's
// first batches were appended, a later one failed with ENOSPC, and the
// follower returned before its fsync; its next fetch offset (the log end)
// made the leader acknowledge acks=all for records one ISR member had
// only in its page cache (with a power loss after it: a consumed record
// lost). The simulated follower syncs what it appended before reporting
// the error; internal/node/fetcher.go still needs the same change.
func TestRegressionFollowerAppendFailure(t *testing.T) {
	for _, seed := range []uint64{1, 8, 24, 37} {
		t.Run("", func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, seed)
			report(t, Run(Options{Seed: seed, Nodes: 3, Partitions: 2, Duration: 10 * time.Second,
				Faults:    FaultMix{Every: 300 * time.Millisecond, DiskFull: true, Kill: true},
				Producers: []ProducerSpec{{Acks: -1, Idempotent: true}, {Acks: -1}, {Acks: 1}, {Acks: 0}}, Consumers: 1}))
		})
	}
}
