package replica

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/vfs"
)

// TestDivergenceOf: a follower's last fetched epoch and fetch offset
// against the leader's log of epoch 0 at [0, 3) and epoch 3 at [3, 6),
// with Kafka's answers (KIP-595's DivergingEpoch, from
// EpochCache.EndOffsetFor): none while the follower's epoch reaches at
// least its fetch offset on the leader, else where that epoch (or the
// largest known below it) ends. A fetch of the latest epoch within the
// log is answered from the epoch published beside the log's bounds,
// without the cache's lock, and must agree.
func TestDivergenceOf(t *testing.T) {
	l, err := storage.Open(vfs.NewMem(), "/p", storage.DefaultConfig(), storage.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, b := range []struct {
		epoch int32
		base  int64
	}{{0, 0}, {3, 3}} {
		data := batch.Build([][]byte{[]byte("a"), []byte("b"), []byte("c")}, 0)
		batch.SetBaseOffset(data, b.base)
		batch.SetLeaderEpoch(data, b.epoch)
		if _, err := l.AppendReplica(data, 0); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		last   int32
		offset int64
		want   string
	}{
		{-1, 0, "none"},   // no epoch to compare
		{3, 6, "none"},    // the latest epoch, at the log end
		{3, 4, "none"},    // the latest epoch, within the log
		{3, 7, "3@6"},     // the latest epoch, past the log end
		{0, 3, "none"},    // epoch 0 ends at 3
		{0, 5, "0@3"},     // past epoch 0's end
		{1, 4, "0@3"},     // an epoch the leader skipped: the one below it
		{5, 6, "-1@0"},    // above the latest: the log start, to reconcile
		{0, 2, "none"},    // within epoch 0
		{3, 3, "none"},    // the latest epoch's first offset
		{2, 3, "0@3"},     // an epoch the leader skipped: epoch 0 named
		{2, 4, "0@3"},     // ... wherever it fetches
		{4, 6, "-1@0"},    // one above the latest
		{3, 100, "3@6"},   // far past the log end
		{0, 100, "0@3"},   // far past epoch 0's end
		{-1, 100, "none"}, // no epoch, however far
	}
	for _, c := range cases {
		d := DivergenceOf(l, api.FetchPartition{Offset: c.offset, LastFetchedEpoch: c.last})
		got := "none"
		if d != nil {
			got = fmt.Sprintf("%d@%d", d.Epoch, d.EndOffset)
		}
		if got != c.want {
			t.Errorf("last fetched epoch %d at %d: diverging %s, want %s", c.last, c.offset, got, c.want)
		}
	}
}
