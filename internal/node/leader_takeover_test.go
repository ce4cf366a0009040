package node

import (
	"strings"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/vfs"
)

// TestLeaderTakeoverDuringFollowerFsync: a follower appends fetched batches,
// and while their fsync runs the metadata makes it the leader (a controlled
// shutdown of the old leader moves leadership mid-fetch). The new leader's
// state starts from the durable end before that fsync; when the fsync
// finishes the leader must learn of it. Otherwise the high watermark stays
// below batches every replica holds, and an idempotent producer retrying a
// batch already in the log waits for its acks=all answer for ever (found by
// TestClusterRollingRestart under load: REQUEST_TIMED_OUT on every retry).
func TestLeaderTakeoverDuringFollowerFsync(t *testing.T) {
	fs := vfs.NewMem()
	p, tcfg := openFollowerOf2(t, newUnitBroker(t, fs), "takeover")

	// Hold the follower's fsync until the leadership has moved here.
	syncing, release := make(chan struct{}), make(chan struct{})
	fs.SetFault(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".log") { // the segment, not the epoch checkpoint
			fs.SetFault(nil)
			close(syncing)
			<-release
		}
		return nil
	})
	fetched := batch.BuildProducer([][]byte{[]byte("a"), []byte("b"), []byte("c")}, time.Now().UnixMilli(), 7, 0, 0)
	appended := make(chan error, 1)
	go func() { appended <- p.AppendFromLeader(fetched, 0, 0) }()
	<-syncing

	// The old leader shut down: this replica leads alone (ISR [1]), so its
	// own durable end is the high watermark.
	leading := metadata.Partition{Index: 0, Replicas: []int32{2, 1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1}
	if err := p.apply(leading, metadata.RoleLeader, tcfg, time.Now()); err != nil {
		t.Fatal(err)
	}
	if !p.isLeader() {
		t.Fatal("the partition did not become leader")
	}
	close(release)
	if err := <-appended; err != nil {
		t.Fatal(err)
	}

	if got := p.highWatermark.Load(); got != 3 {
		t.Fatalf("high watermark %d after the fetched batch became durable, want 3", got)
	}
	// The producer's retry of that batch is a duplicate, acknowledged now
	// rather than after its timeout with REQUEST_TIMED_OUT.
	acked := make(chan api.ProduceResult, 1)
	p.produce(api.ProduceParams{Batches: [][]byte{fetched}, Acks: -1, Timeout: 5 * time.Second},
		func(res api.ProduceResult) { acked <- res })
	if res := <-acked; res.Err != nil || res.BaseOffset != 0 {
		t.Fatalf("retried batch answered %v at offset %d, want no error at 0", res.Err, res.BaseOffset)
	}
}
