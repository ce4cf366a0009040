package node

import (
	"errors"
	"testing"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/vfs"
)

// TestLogMoveOfAFollower moves a follower's log from /data to /data2 with
// the copier the broker runs (copyAndSwap, here in the test's goroutine):
// DescribeLogDirs lists the future replica with its lag while it is
// registered, the partition keeps the same *storage.Log, now in /data2,
// and the follower's appends go on there with nothing lost.
func TestLogMoveOfAFollower(t *testing.T) {
	fs := vfs.NewMem()
	b := newUnitBrokerDirs(t, fs, "/data,/data2")
	p, _ := openFollowerOf2(t, b, "moved")
	b.parts[partKey{p.id, p.index}] = p // what reconcile does with an opened replica
	appendFromLeader := func(n int) {
		t.Helper()
		for i := range n {
			bt := batch.Build([][]byte{[]byte("value"), {byte(i)}}, 1000)
			batch.SetBaseOffset(bt, p.log.LogEndOffset())
			batch.SetLeaderEpoch(bt, 0)
			if err := p.AppendFromLeader(bt, p.log.LogEndOffset()+2, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendFromLeader(300)
	log := p.log
	fut, err := storage.Open(fs, storage.FutureDir("/data2", "moved-0", "u1"), log.Config(), storage.Options{Logger: b.log})
	if err != nil {
		t.Fatal(err)
	}
	if err := fut.TruncateFullyAndStartAt(log.LogStartOffset()); err != nil {
		t.Fatal(err)
	}
	mv := &logMove{p: p, root: "/data2", fut: fut, cancel: make(chan struct{}), done: make(chan struct{})}
	b.logMoves.moves[p] = mv
	seen := map[string]bool{}
	for _, d := range b.describeLogDirs() {
		for _, part := range d.Partitions {
			seen[d.Dir+" "+map[bool]string{true: "future", false: "current"}[part.IsFuture]] = true
			if part.IsFuture && part.OffsetLag != log.LogEndOffset() {
				t.Errorf("future lag %d, want %d", part.OffsetLag, log.LogEndOffset())
			}
		}
	}
	if !seen["/data current"] || !seen["/data2 future"] || len(seen) != 2 {
		t.Fatalf("DescribeLogDirs while moving: %v", seen)
	}

	retired, err := b.copyAndSwap(mv)
	if err != nil {
		t.Fatalf("move: %v", err)
	}
	delete(b.logMoves.moves, mv.p)
	if p.log != log || log.Dir() != "/data2/moved-0" || retired == "" {
		t.Fatalf("after the move: same log %v, dir %s, retired %q", p.log == log, log.Dir(), retired)
	}
	if ok, _ := vfs.Exists(fs, "/data/moved-0"); ok {
		t.Fatal("old directory still named as a partition")
	}
	appendFromLeader(20)
	n := 0
	for off := log.LogStartOffset(); off < log.LogEndOffset(); {
		data, err := log.Read(off, 1<<20, log.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		err = batch.Split(data, func(bt []byte) error {
			h, err := batch.ValidateStored(bt)
			if err != nil {
				return err
			}
			if h.BaseOffset != off {
				return errors.New("offsets not contiguous")
			}
			off = h.LastOffset() + 1
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n != 320 {
		t.Fatalf("%d batches after the move, want 320", n)
	}
}
