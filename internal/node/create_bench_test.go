package node

import (
	"fmt"
	"os"
	"testing"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/vfs"
)

// BenchmarkCreateReplicas is one reconcile creating 300 replicas on the
// real filesystem (under $BENCH_DIR, default the test's temporary
// directory, left there), as a broker of the many-partitions benchmark creates its
// share: a third led here, two thirds followed (of broker 2, not
// fetched from here). What it costs is mostly syscalls: count them with
// `strace -c -f` around `-test.benchtime 3x`.
func BenchmarkCreateReplicas(b *testing.B) {
	const n = 300
	parts := make([]metadata.Partition, n)
	for i := range parts {
		leader := int32(2)
		if i%3 == 0 {
			leader = 1
		}
		parts[i] = metadata.Partition{Index: int32(i), Replicas: []int32{leader, 3 - leader}, ISR: []int32{1, 2}, Leader: leader}
	}
	endpoint := func(port int32) []metadata.Endpoint {
		return []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: port}}
	}
	root := os.Getenv("BENCH_DIR")
	if root == "" {
		root = b.TempDir()
	}
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		dir := fmt.Sprintf("%s/run-%d", root, i)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		im, err := metadata.Empty("unit-test").Apply(
			metadata.RegisterBroker{Broker: metadata.Broker{ID: 1, Epoch: 5, Endpoints: endpoint(9092)}},
			metadata.RegisterBroker{Broker: metadata.Broker{ID: 2, Epoch: 6, Endpoints: endpoint(9093)}},
			metadata.CreateTopic{Name: "created", ID: metadata.TopicID{9, 15: 1}, Partitions: parts},
		)
		if err != nil {
			b.Fatal(err)
		}
		br := newUnitBrokerDirs(b, vfs.OS{}, dir)
		br.brokerEpoch.Store(5)
		br.image.Store(im)
		b.StartTimer()
		if err := br.reconcilePartitions(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		// Closed without the close's syncs: only the creation is
		// measured, and the directory is removed next.
		for _, p := range br.partitionList() {
			if err := p.closeLeavingDirSync(); err != nil {
				b.Fatal(err)
			}
		}
		// Left on disk (removed with the temporary directory, or by
		// whoever set BENCH_DIR): removing them here would add to the
		// syscall counts.
		b.StartTimer()
	}
}
