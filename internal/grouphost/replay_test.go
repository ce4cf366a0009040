package grouphost

import (
	"fmt"
	"testing"

	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/storage"
)

func fetchAll(t *testing.T, l Loaded, groupID string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, f := range l.Coordinator.FetchOffsets(groupID, nil) {
		out[fmt.Sprintf("%s-%d", f.Topic, f.Partition)] = f.Offset
	}
	return out
}

// The issue #11 difference (4), resolved for internal/node's replay: the
// simulator's copy applied control batches' records as group records,
// failed on an empty read below the log end, and refused compressed
// batches above 1 MiB. Each test fails under that behaviour.

// TestReplaySkipsControlBatches: a transaction marker in
// __consumer_offsets (Kafka writes them there for transactional offset
// commits) carries no group state; applying its control record as a
// group record reports an unreadable record (a violation in the
// simulator).
func TestReplaySkipsControlBatches(t *testing.T) {
	l := openLog(t, storage.DefaultConfig())
	appendBatch(t, l, recordsBatch(commitRecords(t, "g", group.CommitOffset{Topic: "t", Partition: 0, Offset: 5, LeaderEpoch: -1}), 0), 0)
	appendBatch(t, l, controlBatch(), 0)
	appendBatch(t, l, recordsBatch(commitRecords(t, "g", group.CommitOffset{Topic: "t", Partition: 1, Offset: 9, LeaderEpoch: -1}), 0), 0)
	loaded, err := Replay(group.DefaultConfig(), 1, l, "p", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Problems) != 0 {
		t.Fatalf("problems loading past a control batch: %v", loaded.Problems)
	}
	if got := fetchAll(t, loaded, "g"); got["t-0"] != 5 || got["t-1"] != 9 || len(got) != 2 {
		t.Fatalf("loaded offsets %v, want t-0=5 t-1=9", got)
	}
	if loaded.End != l.LogEndOffset() {
		t.Fatalf("replayed to %d, log end %d", loaded.End, l.LogEndOffset())
	}
}

// TestReplayEndsOnAnEmptyReadOfACompactedTail: compaction may remove every
// record from some offset to the log end (a group deleted, its tombstones
// gone after delete.retention.ms, the active segment empty). A read there
// returns nothing; the replay is complete, not broken.
func TestReplayEndsOnAnEmptyReadOfACompactedTail(t *testing.T) {
	cfg := storage.DefaultConfig()
	cfg.SegmentBytes = 1024
	cfg.SegmentMs = 1
	cfg.RetentionMs = -1
	cfg.MinCleanableDirtyRatio = 0
	cfg.DeleteRetentionMs = 0
	l := openLog(t, cfg)
	appendBatch(t, l, recordsBatch(commitRecords(t, "kept", group.CommitOffset{Topic: "t", Partition: 0, Offset: 3, LeaderEpoch: -1}), 0), 0)
	// A group committed, then deleted: its commit and tombstone.
	c, err := group.New(group.DefaultConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	_, out := c.CommitOffsets(0, group.CommitRequest{GroupID: "gone", Generation: -1,
		Offsets: []group.CommitOffset{{Topic: "t", Partition: 0, Offset: 7, LeaderEpoch: -1}}})
	appendBatch(t, l, recordsBatch(out.Records, 0), 0)
	_, del := c.DeleteGroups([]string{"gone"})
	if len(del.Records) == 0 {
		t.Fatal("deleting the group made no tombstones")
	}
	appendBatch(t, l, recordsBatch(del.Records, 0), 0)
	if err := l.MaybeRoll(10); err != nil { // the active segment is now empty
		t.Fatal(err)
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	end := l.LogEndOffset()
	for _, now := range []int64{100, 200} { // the second pass drops the tombstones
		if _, err := l.Clean(storage.CleanParams{NowMs: now, UpTo: end, Force: true}, storage.NewOffsetMap(1<<20)); err != nil {
			t.Fatal(err)
		}
	}
	data, err := l.Read(1, 1<<20, end, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 0 {
		t.Fatalf("the test needs a compacted tail: %d bytes readable from offset 1 to the log end %d", len(data), end)
	}

	loaded, err := Replay(group.DefaultConfig(), 1, l, "p", 300)
	if err != nil {
		t.Fatalf("replay of a log compacted to its end: %v", err)
	}
	if got := fetchAll(t, loaded, "kept"); got["t-0"] != 3 {
		t.Fatalf("kept's offsets %v", got)
	}
	if got := fetchAll(t, loaded, "gone"); len(got) != 0 {
		t.Fatalf("a deleted group's offsets came back: %v", got)
	}
	if loaded.End != end {
		t.Fatalf("replayed to %d, want the log end %d (answers wait for it)", loaded.End, end)
	}
}

// TestReplayReadsALargeCompressedBatch: a compressed batch of group
// records may decompress to more than a read's 1 MiB; loading allows up
// to MaxLoadBatchBytes rather than leaving the partition's groups
// unavailable.
func TestReplayReadsALargeCompressedBatch(t *testing.T) {
	const partitions = 20_000
	offsets := make([]group.CommitOffset, partitions)
	for i := range offsets {
		offsets[i] = group.CommitOffset{Topic: "a-topic-with-a-longer-name", Partition: int32(i), Offset: int64(i), LeaderEpoch: -1}
	}
	plain := recordsBatch(commitRecords(t, "big", offsets...), 0)
	if len(plain) <= 1<<20 {
		t.Fatalf("the batch is %d bytes decompressed; the test needs more than 1 MiB", len(plain))
	}
	l := openLog(t, storage.DefaultConfig())
	appendBatch(t, l, gzipped(t, plain), 0)
	loaded, err := Replay(group.DefaultConfig(), 1, l, "p", 0)
	if err != nil {
		t.Fatalf("replay of a %d-byte (decompressed) batch: %v", len(plain), err)
	}
	if got := fetchAll(t, loaded, "big"); len(got) != partitions {
		t.Fatalf("loaded %d offsets, want %d", len(got), partitions)
	}
}
