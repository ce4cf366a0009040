package node

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/replica"
	"github.com/skein-log/skein/internal/vfs"
)

// TestBrokenInvariantFencesPartition: when the replica core reports an
// impossible state, the broker stops serving the partition's reads too
// (the core refuses its writes itself: internal/replica tests that), rather
// than serve data it can no longer vouch for.
func TestBrokenInvariantFencesPartition(t *testing.T) {
	p, tcfg := openFollowerOf2(t, newUnitBroker(t, vfs.NewMem()), "fenced")
	leading := metadata.Partition{Index: 0, Replicas: []int32{2, 1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1}
	if err := p.apply(leading, metadata.RoleLeader, tcfg, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.read(0, 1<<20, true, replica.ReadHighWatermark, false); err != nil {
		t.Fatalf("read before: %v", err)
	}
	p.mu.Lock()
	p.readyLocked(replica.Ready{Violations: []string{"fenced-0: leader high watermark 3 below the published 5"}})
	p.mu.Unlock()
	if _, err := p.read(0, 1<<20, true, replica.ReadHighWatermark, false); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("read of a fenced partition: %v", err)
	}
}
