package sim

import (
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
	var inits, ends, read int
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
		})
	}
	if inits == 0 || ends == 0 || read == 0 {
		t.Fatalf("over %d seeds %d InitProducerId and %d EndTxn answers succeeded, %d records read committed: the run checked nothing", seeds, inits, ends, read)
	}
	t.Logf("%d seeds: %d InitProducerId, %d EndTxn answered, %d transactional records read committed", seeds, inits, ends, read)
}
