package node

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/invariant"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/replica"
	"github.com/skein-log/skein/internal/vfs"
)

// TestBrokenInvariantFencesPartition: when the replica core reports an
// impossible state (here an fsync result past the log end), the broker
// stops serving the partition: reads and writes answer
// KAFKA_STORAGE_ERROR instead of serving data it can no longer vouch for.
// With the invariants build tag the core panics at the spot instead.
func TestBrokenInvariantFencesPartition(t *testing.T) {
	if invariant.Panics {
		t.Skip("built with -tags invariants: the core panics (internal/replica tests that)")
	}
	p, tcfg := openFollowerOf2(t, newUnitBroker(t, vfs.NewMem()), "fenced")
	leading := metadata.Partition{Index: 0, Replicas: []int32{2, 1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1}
	if err := p.apply(leading, metadata.RoleLeader, tcfg, time.Now()); err != nil {
		t.Fatal(err)
	}
	var violations []string
	p.step(func(c *replica.Replica) replica.Ready {
		rd := c.Synced(99, nil)
		violations = rd.Violations
		return rd
	})
	if len(violations) != 1 {
		t.Fatalf("violations %q, want one", violations)
	}
	if _, err := p.read(0, 1<<20, true, false); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("read of a fenced partition: %v", err)
	}
	done := make(chan api.ProduceResult, 1)
	p.produce(api.ProduceParams{Acks: 1, Timeout: time.Second, Batches: [][]byte{batch.Build([][]byte{[]byte("x")}, 1)}},
		func(res api.ProduceResult) { done <- res })
	if res := <-done; !errors.Is(res.Err, kerr.KafkaStorageError) {
		t.Fatalf("produce to a fenced partition: %v", res.Err)
	}
}
