package storage

import (
	"bytes"
	"errors"
	"testing"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/vfs"
)

func TestAppendAssignsOffsetsAndReads(t *testing.T) {
	l := openLog(t, vfs.OS{}, t.TempDir(), smallConfig())
	defer l.Close()
	var want [][]byte
	for i := range 50 {
		b := makeBatch(1+i%4, 40, int64(1000+i*10), byte(i))
		res := mustAppend(t, l, b, 3, 0)
		h, _ := batch.ParseHeader(b)
		if res.BaseOffset != h.BaseOffset || h.LeaderEpoch != 3 {
			t.Fatalf("header not stamped: base %d epoch %d, result %+v", h.BaseOffset, h.LeaderEpoch, res)
		}
		want = append(want, b)
	}
	if len(l.segments) < 2 {
		t.Fatalf("expected rolls, have %d segments", len(l.segments))
	}
	sameBatches(t, readAll(t, l), want, "read")
	if e, ok := l.Epochs().Latest(); !ok || e != 3 {
		t.Fatalf("latest epoch %d %v", e, ok)
	}
}

// fillLog appends n batches of 2 records (100-byte values), timestamps
// 1000+10*i, and returns them.
func fillLog(t testing.TB, l *Log, n int, epoch int32) [][]byte {
	t.Helper()
	var out [][]byte
	for i := range n {
		b := makeBatch(2, 100, int64(1000+10*i), byte(i))
		mustAppend(t, l, b, epoch, 0)
		out = append(out, b)
	}
	return out
}

func TestReadLimits(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "/p", smallConfig())
	defer l.Close()
	batches := fillLog(t, l, 40, 0) // 2 offsets per batch
	size := len(batches[0])
	tests := []struct {
		name        string
		offset      int64
		maxBytes    int
		upTo        int64
		minOne      bool
		wantBatches int
		wantFirst   int64
		wantErr     error
	}{
		{"one batch exactly", 0, size, 80, false, 1, 0, nil},
		{"two and a bit", 0, 2*size + 10, 80, false, 2, 0, nil},
		{"mid-batch offset starts at its batch", 5, size, 80, false, 1, 4, nil},
		{"maxBytes too small without minOne", 0, size - 1, 80, false, 0, 0, nil},
		{"maxBytes too small with minOne", 0, 1, 80, true, 1, 0, nil},
		{"zero maxBytes with minOne", 10, 0, 80, true, 1, 10, nil},
		{"upTo cuts", 0, 1 << 20, 6, false, 3, 0, nil},
		{"upTo inside first batch", 4, 1 << 20, 5, true, 0, 0, nil},
		{"at log end", 80, 1 << 20, 80, true, 0, 0, nil},
		{"past log end", 81, 1 << 20, 90, true, 0, 0, ErrOffsetOutOfRange},
		{"negative", -1, 1 << 20, 90, true, 0, 0, ErrOffsetOutOfRange},
		{"in a later segment", 70, 1 << 20, 80, false, 5, 70, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := l.Read(tc.offset, tc.maxBytes, tc.upTo, tc.minOne)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			pooled, ref, perr := l.ReadShared(tc.offset, tc.maxBytes, tc.upTo, tc.minOne)
			if !bytes.Equal(pooled, data) || !errors.Is(perr, tc.wantErr) || (ref == nil) != (len(pooled) == 0) {
				t.Fatalf("ReadShared: %d bytes, held %v, err %v; Read: %d bytes, err %v", len(pooled), ref != nil, perr, len(data), err)
			}
			ref.Release()
			var n int
			var first int64 = -1
			batch.Split(data, func(b []byte) error {
				h, err := batch.Validate(b)
				if err != nil {
					t.Fatalf("invalid batch: %v", err)
				}
				if first < 0 {
					first = h.BaseOffset
				}
				if h.LastOffset() >= tc.upTo {
					t.Fatalf("batch ending at %d not below upTo %d", h.LastOffset(), tc.upTo)
				}
				n++
				return nil
			})
			if n != tc.wantBatches {
				t.Fatalf("%d batches, want %d", n, tc.wantBatches)
			}
			if n > 0 && first != tc.wantFirst {
				t.Fatalf("first batch at %d, want %d", first, tc.wantFirst)
			}
			if n > 0 && !tc.minOne && len(data) > tc.maxBytes {
				t.Fatalf("read %d bytes, max %d", len(data), tc.maxBytes)
			}
		})
	}
}

func TestRollBySizeAndIndex(t *testing.T) {
	cfg := smallConfig()
	l := openLog(t, vfs.NewMem(), "/p", cfg)
	defer l.Close()
	fillLog(t, l, 100, 0)
	for i, s := range l.segments {
		if s.size > cfg.SegmentBytes {
			t.Fatalf("segment %d has %d bytes > %d", i, s.size, cfg.SegmentBytes)
		}
		if i > 0 && s.base != l.segments[i-1].next {
			t.Fatalf("segment %d base %d, previous ends at %d", i, s.base, l.segments[i-1].next)
		}
		if s != l.active() && len(s.index.entries) == 0 {
			t.Fatalf("segment %d has no index entries", i)
		}
		// Every index entry points at the batch it names.
		for _, e := range s.index.entries {
			h, err := s.readHeader(int64(e.pos))
			if err != nil || h.LastOffset() != s.base+int64(e.rel) {
				t.Fatalf("segment %d entry %+v -> %+v %v", i, e, h, err)
			}
		}
	}
}

func TestRollByIndexFull(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.IndexIntervalBytes = 1
	cfg.MaxIndexBytes = 4 * timeIndexEntrySize // 6 offset entries, 4 time entries
	l := openLog(t, vfs.NewMem(), "/p", cfg)
	defer l.Close()
	fillLog(t, l, 30, 0)
	if len(l.segments) < 4 {
		t.Fatalf("expected rolls from full indexes, have %d segments", len(l.segments))
	}
	for _, s := range l.segments {
		if len(s.timeIndex.entries)*timeIndexEntrySize > cfg.MaxIndexBytes {
			t.Fatalf("time index overfull: %d entries", len(s.timeIndex.entries))
		}
	}
}

func TestRollBySegmentMs(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.SegmentMs = 1000
	l := openLog(t, vfs.NewMem(), "/p", cfg)
	defer l.Close()
	mustAppend(t, l, makeBatch(1, 10, 5, 1), 0, 10_000)
	mustAppend(t, l, makeBatch(1, 10, 5, 1), 0, 10_500)
	if len(l.segments) != 1 {
		t.Fatalf("rolled too early")
	}
	if err := l.MaybeRoll(11_001); err != nil {
		t.Fatal(err)
	}
	if len(l.segments) != 2 {
		t.Fatalf("MaybeRoll did not roll: %d segments", len(l.segments))
	}
	if err := l.MaybeRoll(20_000); err != nil || len(l.segments) != 2 {
		t.Fatalf("empty segment rolled: %d segments, %v", len(l.segments), err)
	}
	mustAppend(t, l, makeBatch(1, 10, 5, 1), 0, 20_000)
	mustAppend(t, l, makeBatch(1, 10, 5, 1), 0, 21_001)
	if len(l.segments) != 3 {
		t.Fatalf("append did not roll by time: %d segments", len(l.segments))
	}
}

func TestBatchTooLargeAndInvalid(t *testing.T) {
	cfg := smallConfig()
	l := openLog(t, vfs.NewMem(), "/p", cfg)
	defer l.Close()
	if _, err := l.Append(makeBatch(1, int(cfg.SegmentBytes), 0, 0), 0, 0); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("got %v", err)
	}
	bad := makeBatch(1, 10, 0, 0)
	bad[len(bad)-1] ^= 1
	if _, err := l.Append(bad, 0, 0); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("got %v", err)
	}
	if _, err := l.Append(bad[:30], 0, 0); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("got %v", err)
	}
	if l.LogEndOffset() != 0 {
		t.Fatalf("log end moved to %d", l.LogEndOffset())
	}
}

func TestAppendReplica(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "/p", smallConfig())
	defer l.Close()
	b := makeBatch(3, 10, 0, 0)
	batch.SetLeaderEpoch(b, 2)
	if _, err := l.AppendReplica(b, 0); err != nil {
		t.Fatal(err)
	}
	b2 := makeBatch(2, 10, 0, 0)
	batch.SetBaseOffset(b2, 2)
	batch.SetLeaderEpoch(b2, 4)
	if _, err := l.AppendReplica(b2, 0); !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("overlap accepted: %v", err)
	}
	if l.OffsetGaps() {
		t.Fatal("contiguous log marked as having gaps")
	}
	// A compacted leader serves gaps: the log marks itself and goes on.
	batch.SetBaseOffset(b2, 5)
	if _, err := l.AppendReplica(b2, 0); err != nil {
		t.Fatal(err)
	}
	if !l.OffsetGaps() || l.LogEndOffset() != 7 {
		t.Fatalf("after a gap: gaps %v, log end %d", l.OffsetGaps(), l.LogEndOffset())
	}
	want := []EpochEntry{{2, 0}, {4, 5}}
	if got := l.Epochs().Entries(); !equalEntries(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	// A leader append with an older epoch is a fenced leader.
	if _, err := l.Append(makeBatch(1, 10, 0, 0), 3, 0); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("stale epoch accepted: %v", err)
	}
	b3 := makeBatch(1, 10, 0, 0)
	batch.SetBaseOffset(b3, 7)
	batch.SetLeaderEpoch(b3, 1)
	if _, err := l.AppendReplica(b3, 0); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("stale replica epoch accepted: %v", err)
	}
}

func equalEntries(a, b []EpochEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestOffsetForTimestampAndMax(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "/p", smallConfig())
	defer l.Close()
	fillLog(t, l, 60, 0) // batch i: offsets 2i..2i+1, max ts 1000+10i+1
	tests := []struct {
		ts       int64
		wantBase int64
		found    bool
	}{
		{0, 0, true},
		{1001, 0, true},
		{1002, 2, true},
		{1011, 2, true},
		{1012, 4, true},
		{1000 + 10*45, 90, true},
		{1000 + 10*59 + 1, 118, true},
		{1000 + 10*59 + 2, 0, false},
	}
	for _, tc := range tests {
		base, maxTs, found, err := l.OffsetForTimestamp(tc.ts)
		if err != nil || found != tc.found || (found && base != tc.wantBase) {
			t.Fatalf("ts %d: base %d found %v err %v, want %d %v", tc.ts, base, found, err, tc.wantBase, tc.found)
		}
		if found && maxTs < tc.ts {
			t.Fatalf("ts %d: batch max %d below it", tc.ts, maxTs)
		}
	}
	ts, off := l.MaxTimestamp()
	if ts != 1000+10*59+1 || off != 119 {
		t.Fatalf("max timestamp %d at %d", ts, off)
	}
}

func TestTruncate(t *testing.T) {
	for _, reopen := range []bool{false, true} {
		fs := vfs.NewMem()
		l := openLog(t, fs, "/p", smallConfig())
		batches := fillLog(t, l, 30, 1)
		b := makeBatch(2, 100, 5000, 9)
		mustAppend(t, l, b, 2, 0) // epoch 2 starts at 60
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := l.Truncate(61); err != nil { // inside the last batch: it goes
			t.Fatal(err)
		}
		if l.LogEndOffset() != 60 || l.DurableEndOffset() != 60 {
			t.Fatalf("after truncate: end %d durable %d", l.LogEndOffset(), l.DurableEndOffset())
		}
		if e, _ := l.Epochs().Latest(); e != 1 {
			t.Fatalf("epoch cache not truncated: latest %d", e)
		}
		if err := l.Truncate(20); err != nil {
			t.Fatal(err)
		}
		if l.LogEndOffset() != 20 {
			t.Fatalf("end %d", l.LogEndOffset())
		}
		if reopen {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openLog(t, fs, "/p", smallConfig())
		}
		got := readAll(t, l)
		if len(got) != 10 {
			t.Fatalf("%d batches left", len(got))
		}
		for i := range got {
			if !bytes.Equal(got[i], batches[i]) {
				t.Fatalf("batch %d differs", i)
			}
		}
		if ts, off := l.MaxTimestamp(); ts != 1000+90+1 || off != 19 {
			t.Fatalf("max timestamp %d at %d after truncate", ts, off)
		}
		mustAppend(t, l, makeBatch(1, 10, 0, 0), 3, 0)
		if l.LogEndOffset() != 21 {
			t.Fatalf("append after truncate: end %d", l.LogEndOffset())
		}
		if err := l.Truncate(0); err != nil || l.LogEndOffset() != 0 {
			t.Fatalf("truncate to 0: end %d %v", l.LogEndOffset(), err)
		}
		l.Close()
	}
}

// TestTruncateAtLogEndDropsEmptyEpoch: a replica that led an epoch
// without appending and then follows must forget that epoch when told to
// truncate at its log end, or it keeps claiming an epoch the leader never
// had and reconciles forever (found by the simulator, seed 22 of
// internal/sim's swarm).
func TestTruncateAtLogEndDropsEmptyEpoch(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "/p", smallConfig())
	fillLog(t, l, 5, 1) // epoch 1
	if err := l.Epochs().Assign(2, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	end := l.LogEndOffset()
	if err := l.Truncate(end); err != nil {
		t.Fatal(err)
	}
	if e, _ := l.Epochs().Latest(); e != 1 || l.LogEndOffset() != end {
		t.Fatalf("after truncating at the log end: latest epoch %d (want 1), end %d (want %d)", e, l.LogEndOffset(), end)
	}
	l.Close()
}

func TestDeleteBeforeAndRetention(t *testing.T) {
	fs := vfs.NewMem()
	cfg := smallConfig()
	l := openLog(t, fs, "/p", cfg)
	fillLog(t, l, 100, 0)
	segs := len(l.segments)
	if err := l.DeleteBefore(51); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 51 {
		t.Fatalf("log start %d", l.LogStartOffset())
	}
	if l.segments[0].base > 51 || l.segments[0].next <= 51 {
		t.Fatalf("first segment [%d,%d) does not hold the log start", l.segments[0].base, l.segments[0].next)
	}
	if _, err := l.Read(49, 1000, 200, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	if data, err := l.Read(51, 1000, 200, true); err != nil || len(data) == 0 {
		t.Fatalf("read at log start: %d bytes %v", len(data), err)
	}
	if err := l.DeleteBefore(1000); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("delete past end: %v", err)
	}
	l.Close()
	l = openLog(t, fs, "/p", cfg)
	if l.LogStartOffset() != 51 {
		t.Fatalf("log start after reopen %d", l.LogStartOffset())
	}

	// retention.bytes: keep at most ~3 segments' worth.
	l.SetConfig(Config{SegmentBytes: cfg.SegmentBytes, IndexIntervalBytes: 256, RetentionBytes: 3 * cfg.SegmentBytes, RetentionMs: -1})
	n, err := l.EnforceRetention(0)
	if err != nil || n == 0 {
		t.Fatalf("retention.bytes deleted %d: %v", n, err)
	}
	// Kafka deletes a segment only if the log stays at or above the limit
	// without it, so up to one segment's worth of excess remains.
	if l.Size() > 4*cfg.SegmentBytes {
		t.Fatalf("size %d over retention", l.Size())
	}
	if l.LogStartOffset() != l.segments[0].base {
		t.Fatalf("log start %d, first segment %d", l.LogStartOffset(), l.segments[0].base)
	}
	// retention.ms: everything but the active segment is old.
	l.SetConfig(Config{SegmentBytes: cfg.SegmentBytes, IndexIntervalBytes: 256, RetentionBytes: -1, RetentionMs: 100})
	if n, err := l.EnforceRetention(1000 + 10*70); err != nil || n == 0 {
		t.Fatalf("retention.ms deleted %d: %v", n, err)
	}
	if n, err := l.EnforceRetention(1 << 40); err != nil || len(l.segments) != 1 {
		t.Fatalf("retention.ms left %d segments (%d deleted): %v", len(l.segments), n, err)
	}
	if segs < 5 {
		t.Fatalf("test needs more segments: %d", segs)
	}
	readAll(t, l)
	l.Close()
}

func TestReopenCleanAndUnclean(t *testing.T) {
	for _, clean := range []bool{true, false} {
		fs := vfs.NewMem()
		l := openLog(t, fs, "/p", smallConfig())
		want := fillLog(t, l, 77, 5)
		if clean {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		l2 := openLog(t, fs, "/p", smallConfig())
		got := readAll(t, l2)
		if len(got) != len(want) {
			t.Fatalf("clean=%v: %d batches, want %d", clean, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("clean=%v: batch %d differs", clean, i)
			}
		}
		// Indexes after reopen match the ones built while appending.
		for i, s := range l2.segments {
			if i >= len(l.segments) {
				break
			}
			old := l.segments[i]
			if len(s.index.entries) != len(old.index.entries) || s.maxTimestamp != old.maxTimestamp || s.next != old.next {
				t.Fatalf("clean=%v segment %d: index %d vs %d entries, max ts %d vs %d, next %d vs %d", clean, i,
					len(s.index.entries), len(old.index.entries), s.maxTimestamp, old.maxTimestamp, s.next, old.next)
			}
		}
		if _, err := l2.Append(makeBatch(1, 1, 0, 0), 5, 0); err != nil {
			t.Fatal(err)
		}
		if exists, _ := vfs.Exists(fs, "/p/"+cleanShutdownFile); exists {
			t.Fatal("clean shutdown marker still there after open")
		}
		l2.Close()
	}
}

func TestReadDetectsCorruption(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/p", smallConfig())
	defer l.Close()
	fillLog(t, l, 5, 0)
	// Flip a byte inside the third batch's records.
	size := int64(len(makeBatch(2, 100, 0, 0)))
	if err := fs.Corrupt(segmentFileName("/p", 0, logSuffix), 2*size+100, 0x40); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(0, 1<<20, 100, true); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt batch returned: %v", err)
	}
	if data, err := l.Read(0, int(2*size), 100, true); err != nil || len(data) != int(2*size) {
		t.Fatalf("batches before the damage: %d bytes, %v", len(data), err)
	}
}

func TestBadIndexFilesAreRebuilt(t *testing.T) {
	cases := map[string]func(fs *vfs.Mem, path string){
		"missing": func(fs *vfs.Mem, path string) { fs.Remove(path) },
		"zero tail": func(fs *vfs.Mem, path string) {
			f, _ := fs.OpenFile(path, 2, 0)
			size, _ := f.Size()
			f.WriteAt(make([]byte, 24), size)
			f.Sync()
			f.Close()
		},
		"odd size": func(fs *vfs.Mem, path string) {
			f, _ := fs.OpenFile(path, 2, 0)
			size, _ := f.Size()
			f.Truncate(size - 3)
			f.Sync()
			f.Close()
		},
		"garbage": func(fs *vfs.Mem, path string) { fs.Corrupt(path, 5, 0xff) },
	}
	for name, damage := range cases {
		for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
			t.Run(name+suffix, func(t *testing.T) {
				fs := vfs.NewMem()
				l := openLog(t, fs, "/p", smallConfig())
				want := fillLog(t, l, 40, 0)
				wantIdx := l.segments[0].index.entries
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				damage(fs, segmentFileName("/p", 0, suffix))
				l = openLog(t, fs, "/p", smallConfig())
				defer l.Close()
				if got := readAll(t, l); len(got) != len(want) {
					t.Fatalf("%d batches, want %d", len(got), len(want))
				}
				if len(l.segments[0].index.entries) != len(wantIdx) {
					t.Fatalf("index has %d entries, want %d", len(l.segments[0].index.entries), len(wantIdx))
				}
				if base, _, found, _ := l.OffsetForTimestamp(1000 + 10*3 + 1); !found || base != 6 {
					t.Fatalf("time lookup: %d %v", base, found)
				}
			})
		}
	}
}

// AppendValidated stores a batch the produce handler has checked exactly
// as Append does, but refuses bad framing without computing the CRC (a
// batch damaged after its check would be stored and then caught by every
// reader: the CRC is still the producer's).
func TestAppendValidated(t *testing.T) {
	l := openLog(t, vfs.OS{}, t.TempDir(), smallConfig())
	defer l.Close()
	b := makeBatch(3, 40, 1000, 1)
	res, err := l.AppendValidated(b, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.BaseOffset != 0 || res.LastOffset != 2 || l.LogEndOffset() != 3 {
		t.Fatalf("result %+v, log end %d", res, l.LogEndOffset())
	}
	if e, ok := l.Epochs().Latest(); !ok || e != 2 {
		t.Fatalf("latest epoch %d %v", e, ok)
	}
	got := readAll(t, l)
	if len(got) != 1 || !bytes.Equal(got[0], b) {
		t.Fatalf("read back %d batches", len(got))
	}
	if _, err := l.AppendValidated(b[:len(b)-1], 2, 0); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("truncated batch: %v, want ErrInvalidBatch", err)
	}
	if _, err := l.AppendValidated(b, 1, 0); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("older epoch: %v, want ErrStaleEpoch", err)
	}
}
