package storage

import (
	"fmt"
	"slices"
	"testing"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/producer"
	"github.com/skein-log/skein/internal/vfs"
)

// compactionScenario writes a log worth compacting (updates, a tombstone,
// an idempotent producer) and syncs it.
func compactionScenario(t *testing.T, fs vfs.FS) *Log {
	l := openLog(t, fs, "/data/p0", compactConfig())
	writeUpdates(t, l, 12, 4, 100)
	mustAppend(t, l, keyedBatch(150, 9, 0, 0, kv{key: "k1", value: "from-producer"}), 0, 150)
	mustAppend(t, l, keyedBatch(160, -1, 0, 0, kv{key: "k2", tombstone: true}), 0, 160)
	writeUpdates(t, l, 12, 4, 200)
	mustSync(t, l)
	return l
}

// TestCleanCrashAtEveryFilesystemCall cuts power at each filesystem call a
// compaction pass (two of them, the second merging) makes, and checks that
// the reopened log holds every record the finished passes keep and nothing
// they did not start from: post ⊆ recovered ⊆ pre, same log start and end.
func TestCleanCrashAtEveryFilesystemCall(t *testing.T) {
	// The uninterrupted run: the records before and after, and how many
	// filesystem calls the passes make.
	ref := vfs.NewMem()
	l := compactionScenario(t, ref)
	pre := readRecords(t, l)
	start, end := l.LogStartOffset(), l.LogEndOffset()
	c := &crasher{fs: ref}
	ref.SetFault(c.fault)
	for _, now := range []int64{1000, 1100} {
		mustClean(t, l, CleanParams{NowMs: now, UpTo: end, Force: true})
	}
	ref.SetFault(nil)
	post := readRecords(t, l)
	l.Close()
	if len(post) >= len(pre) {
		t.Fatalf("nothing compacted: %d records before, %d after", len(pre), len(post))
	}

	total := c.count
	for at := 1; at <= total+1; at++ {
		for _, partial := range []bool{false, true} {
			fs := vfs.NewMem()
			// The scenario itself runs without faults; then power is cut
			// at the at-th call of the passes. Mem makes directory changes
			// durable all at once, at SyncDir; a real filesystem may persist
			// some of them alone. partial models that: the at-th call fails,
			// whatever directory changes were made are made durable, then
			// power is cut.
			l := compactionScenario(t, fs)
			c := &crasher{fs: fs, at: at}
			calls := 0
			if partial {
				fs.SetFault(func(op vfs.Op, path string) error {
					if calls++; calls >= at {
						return errPowerLoss
					}
					return nil
				})
			} else {
				fs.SetFault(c.fault)
			}
			for _, now := range []int64{1000, 1100} {
				if _, err := l.Clean(CleanParams{NowMs: now, UpTo: end, Force: true}, NewOffsetMap(1<<20)); err != nil {
					break
				}
			}
			fs.SetFault(nil)
			if partial {
				if err := fs.SyncDir("/data/p0"); err != nil {
					t.Fatal(err)
				}
				fs.Crash(vfs.CrashOptions{})
			} else if !c.crashed {
				fs.Crash(vfs.CrashOptions{})
			}
			label := fmt.Sprintf("crash at call %d/%d partial=%v", at, total, partial)
			r, err := Open(fs, "/data/p0", compactConfig(), quietOptions())
			if err != nil {
				t.Fatalf("%s: reopen: %v", label, err)
			}
			got := readRecords(t, r)
			if r.LogStartOffset() != start || r.LogEndOffset() != end {
				t.Fatalf("%s: log covers [%d, %d), want [%d, %d)", label, r.LogStartOffset(), r.LogEndOffset(), start, end)
			}
			if !subset(post, got) || !subset(got, pre) {
				t.Fatalf("%s: recovered records\n%v\nnot between\n%v\nand\n%v", label, got, post, pre)
			}
			// The recovered log compacts to the same result.
			mustClean(t, r, CleanParams{NowMs: 1100, UpTo: end, Force: true})
			if again := readRecords(t, r); !slices.Equal(again, post) {
				t.Fatalf("%s: compacting the recovered log gives\n%v\nwant\n%v", label, again, post)
			}
			if err := r.Close(); err != nil {
				t.Fatalf("%s: close: %v", label, err)
			}
		}
	}
}

// subset reports whether every record of a is in b.
func subset(a, b []stored) bool {
	in := map[stored]bool{}
	for _, r := range b {
		in[r] = true
	}
	for _, r := range a {
		if !in[r] {
			return false
		}
	}
	return true
}

// TestCleanKeepsProducerState checks that an idempotent producer's state
// rebuilt from a compacted log still knows its last sequence (a retry of
// its last batch is a duplicate, the next sequence is accepted) even when
// every record of that batch was compacted away.
func TestCleanKeepsProducerState(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "/p", compactConfig())
	defer l.Close()
	const pid = 42
	seq := int32(0)
	var lastSent []byte
	for i := range 6 {
		lastSent = keyedBatch(100, pid, 3, seq, kv{key: fmt.Sprintf("p%d", i%2), value: "a"}, kv{key: "shared", value: "b"})
		mustAppend(t, l, lastSent, 0, 100)
		seq += 2
	}
	// Later plain writes supersede every key the producer wrote.
	for range 4 {
		writeUpdates(t, l, 1, 1, 200)
		mustAppend(t, l, keyedBatch(200, -1, 0, 0, kv{key: "p0", value: "x"}, kv{key: "p1", value: "x"}, kv{key: "shared", value: "x"}), 0, 200)
	}
	writeUpdates(t, l, 20, 3, 300)
	mustSync(t, l)
	before := rebuildProducers(t, l)

	mustClean(t, l, CleanParams{NowMs: 1000, UpTo: l.LogEndOffset(), Force: true})
	for _, r := range readRecords(t, l) {
		if r.value == "a" || r.value == "b" {
			t.Fatalf("producer record %v survived although superseded", r)
		}
	}
	after := rebuildProducers(t, l)
	wantEntry, _ := before.Lookup(pid)
	gotEntry, ok := after.Lookup(pid)
	if !ok || gotEntry.Epoch != 3 || len(gotEntry.Batches) == 0 ||
		gotEntry.Batches[len(gotEntry.Batches)-1] != wantEntry.Batches[len(wantEntry.Batches)-1] {
		t.Fatalf("rebuilt producer state %+v, before compaction %+v", gotEntry, wantEntry)
	}
	retry, _ := batch.ParseHeader(lastSent)
	if dec, err := after.Check(retry); err != nil || dec.Action != producer.Duplicate {
		t.Fatalf("retry of the last batch: %+v, %v", dec, err)
	}
	next, _ := batch.ParseHeader(keyedBatch(400, pid, 3, seq, kv{key: "p0", value: "c"}))
	if dec, err := after.Check(next); err != nil || dec.Action != producer.Append {
		t.Fatalf("next batch: %+v, %v", dec, err)
	}
}

func rebuildProducers(t *testing.T, l *Log) *producer.Table {
	t.Helper()
	tab := producer.NewTable(100)
	if err := l.ScanHeaders(l.LogStartOffset(), func(h batch.Header) error {
		tab.Apply(h)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return tab
}
