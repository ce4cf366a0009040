package sim

import (
	"testing"
	"testing/cryptotest"
	"time"
)

// logDirSeed is the run TestLogDirSeeds makes of a swarm seed: two or
// three log directories per node and an operator moving replicas between
// them (leaders' and followers') among the seed's other faults.
func logDirSeed(t *testing.T, seed uint64, verbose bool) Result {
	cryptotest.SetGlobalRandom(t, seed)
	o := Swarm(seed, *flagDuration)
	if o.Faults.Every == 0 {
		o.Faults = FaultMix{Every: 2 * time.Second, Kill: true, PowerLoss: true, Partition: true}
	}
	o.LogDirs = 2 + int(seed%2)
	o.Faults.LogDirMoves = true
	o.Verbose = verbose
	o.Out = func(s string) { t.Log(s) }
	return Run(o)
}

// TestLogDirSeeds runs swarm seeds whose nodes have several log
// directories while replicas move between them (AlterReplicaLogDirs)
// under crashes, power losses, partitions and reassignments: every move
// ends, every replica ends in exactly one directory with no future log
// left, and the checks of every run hold (no acknowledged acks=all record
// lost, no divergence below the high watermark).
func TestLogDirSeeds(t *testing.T) {
	if *flagSeed != 0 {
		report(t, logDirSeed(t, *flagSeed, testing.Verbose()))
		return
	}
	seeds := *flagSeeds
	if testing.Short() {
		seeds = min(seeds, 20)
	}
	var total Stats
	for seed := *flagFirst; seed < *flagFirst+uint64(seeds); seed++ {
		var r Result
		t.Run("", func(t *testing.T) {
			r = logDirSeed(t, seed, false)
			report(t, r)
		})
		s := r.Stats
		total.LogDirRequests += s.LogDirRequests
		total.LogDirMoves += s.LogDirMoves
		total.LogDirMovesDone += s.LogDirMovesDone
		total.LogDirMovesCancelled += s.LogDirMovesCancelled
		total.LogDirMovesAbandoned += s.LogDirMovesAbandoned
		total.LogDirMovesFailed += s.LogDirMovesFailed
		total.LogDirMovesResumed += s.LogDirMovesResumed
	}
	t.Logf("%d seeds: %d requests, %d moves started: %d completed, %d cancelled, %d abandoned (the replica left), %d failed (I/O errors); %d resumed after a restart",
		seeds, total.LogDirRequests, total.LogDirMoves, total.LogDirMovesDone, total.LogDirMovesCancelled, total.LogDirMovesAbandoned, total.LogDirMovesFailed, total.LogDirMovesResumed)
}
