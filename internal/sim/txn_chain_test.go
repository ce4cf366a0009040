package sim

import (
	"strings"
	"testing"
	"time"

	"testing/cryptotest"
)

// TestTxnChain runs the consume-transform-produce chain (client_chain.go)
// with the transaction coordinator under crashes, power loss, partitions
// and pauses; its checkers (checker_chain.go) judge each run.
func TestTxnChain(t *testing.T) {
	seeds := 20
	if testing.Short() {
		seeds = 5
	}
	var committed, aborted, transformed int
	for seed := *flagFirst; seed < *flagFirst+uint64(seeds); seed++ {
		o := Options{Seed: seed, Nodes: 3, Partitions: 2, ReplicationFactor: 3, MinISR: 2, Duration: *flagDuration, TxnCoordinator: true,
			Faults:    FaultMix{Every: 800 * time.Millisecond, Kill: true, PowerLoss: true, Partition: true, Pause: true},
			Producers: []ProducerSpec{{Acks: -1, Idempotent: true}}, Consumers: 1}
		t.Run("", func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, seed)
			r := Run(o)
			report(t, r)
			committed += r.Stats.ChainCommitted
			aborted += r.Stats.ChainAborted
			transformed += r.Stats.ChainRecords
		})
	}
	if committed == 0 || aborted == 0 || transformed == 0 {
		t.Fatalf("over %d seeds the chain committed %d transactions, aborted %d, transformed %d records: the run checked nothing", seeds, committed, aborted, transformed)
	}
	t.Logf("%d seeds: chain transactions %d committed, %d aborted, %d input records transformed exactly once", seeds, committed, aborted, transformed)
}

// TestTxnChainCheckerCatchesDoubleProcessing: a chain that commits the
// position it started from, not the one after its batch, transforms the
// same input again in its next transaction; the exactly-once check must
// say so.
func TestTxnChainCheckerCatchesDoubleProcessing(t *testing.T) {
	o := Options{Seed: 1, Nodes: 3, Partitions: 2, ReplicationFactor: 3, MinISR: 2, Duration: *flagDuration, TxnCoordinator: true,
		Producers: []ProducerSpec{{Acks: -1, Idempotent: true}}, Consumers: 1, chainCommitsStart: true}
	cryptotest.SetGlobalRandom(t, 1)
	o.Verbose, o.Out = testing.Verbose(), func(s string) { t.Log(s) }
	r := Run(o)
	if len(r.Violations) == 0 || !strings.Contains(r.Violations[0], "transformed twice") && !strings.Contains(r.Violations[0], "at or past the last committed position") {
		t.Fatalf("violations %q, want the chain's input transformed twice", r.Violations)
	}
}
