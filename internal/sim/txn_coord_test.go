package sim

import (
	"strings"
	"testing"
	"testing/cryptotest"
	"time"
)

// TestTxnCoordinator runs the transactional clients against the
// transaction coordinators under crashes, power loss, partitions and
// pauses, with a read_committed reader: a fenced producer never commits,
// no record of a transaction its producer never asked to commit is
// delivered, every id's records follow Kafka's transitions, and the runs
// did something (InitProducerId and EndTxn succeeded, records were read).
func TestTxnCoordinator(t *testing.T) {
	seeds := 20
	if testing.Short() {
		seeds = 5
	}
	var inits, ends, read, committed, aborted, verified, strays, v2ends, quick, heldMax int
	for seed := *flagFirst; seed < *flagFirst+uint64(seeds); seed++ {
		o := Options{Seed: seed, Nodes: 3, Partitions: 2, ReplicationFactor: 3, MinISR: 2, Duration: *flagDuration, TxnCoordinator: true,
			Faults:    FaultMix{Every: 800 * time.Millisecond, Kill: true, PowerLoss: true, Partition: true, Pause: true},
			Producers: []ProducerSpec{{Acks: -1, Idempotent: true}}, Consumers: 1}
		t.Run("", func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, seed)
			r := Run(o)
			report(t, r)
			inits += r.Stats.TxnCoordInits
			ends += r.Stats.TxnCoordEnds
			read += r.Stats.TxnCoordRead
			committed += r.Stats.TxnCoordCommitted
			aborted += r.Stats.TxnCoordAborted
			verified += r.Stats.TxnVerifications
			strays += r.Stats.TxnStrays
			v2ends += r.Stats.TxnV2Ends
			quick += r.Stats.TxnQuickNext
			heldMax = max(heldMax, r.Stats.TxnHeldMax)
		})
	}
	if inits == 0 || ends == 0 || read == 0 || committed == 0 || aborted == 0 || verified == 0 || strays == 0 || v2ends == 0 || quick == 0 {
		t.Fatalf("over %d seeds %d InitProducerId and %d EndTxn answers succeeded (%d of transaction version 2), %d records read committed, %d transactions committed and %d aborted, %d produces verified, %d stray batches sent, %d steps right after an end: the run checked nothing",
			seeds, inits, ends, v2ends, read, committed, aborted, verified, strays, quick)
	}
	t.Logf("%d seeds: %d InitProducerId, %d EndTxn answered (%d of transaction version 2, epoch bumped), %d transactions committed, %d aborted, %d transactional records read committed, %d produces verified or added with the coordinator, %d stray batches refused, %d steps right after an end (at most %d requests held at once)",
		seeds, inits, ends, v2ends, committed, aborted, read, verified, strays, quick, heldMax)
}

// TestTxnAtomicCheckerCatchesAPartialRead: a read_committed reader that
// drops the last record of every transactional batch delivers part of
// committed transactions, and the all-or-nothing checker says so.
func TestTxnAtomicCheckerCatchesAPartialRead(t *testing.T) {
	o := Options{Seed: 1, Nodes: 3, Partitions: 2, Duration: *flagDuration, TxnCoordinator: true, Consumers: 1, txnReaderSkipsLast: true}
	cryptotest.SetGlobalRandom(t, o.Seed)
	r := Run(o)
	if len(r.Violations) == 0 || !strings.Contains(r.Violations[0], "read_committed read past it and delivered") {
		t.Fatalf("violations %q, want a partial read of a committed transaction", r.Violations)
	}
}

// TestTxnVerifyCheckerCatchesAHangingTransaction: with
// transaction.partition.verification.enable off, a leader accepts the
// coordinator clients' stray batches (to partitions their transaction
// never added), each opening a transaction no coordinator will end, and
// the checker says so.
func TestTxnVerifyCheckerCatchesAHangingTransaction(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		o := Options{Seed: seed, Nodes: 3, Partitions: 3, Duration: *flagDuration, TxnCoordinator: true, Consumers: 1, txnVerifyOff: true}
		cryptotest.SetGlobalRandom(t, o.Seed)
		r := Run(o)
		for _, v := range r.Violations {
			if strings.Contains(v, "accepted stray batch") {
				t.Logf("seed %d: %s", seed, v)
				return
			}
		}
	}
	t.Fatal("10 seeds without verification and no stray batch accepted: the checker caught nothing")
}
