package storage

import (
	"errors"
	"testing"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/vfs"
)

// TestDamageBelowRecoveryPointIsCutAtNextOpen: a byte flipped in a sealed
// segment below the recovery point is not looked at by open (only the
// segments from the recovery point are re-validated), so the first read
// over it finds it. That read fails with ErrCorrupt, never returns the
// batch, and makes the next open, clean stop or crash, cut the log at the
// damaged batch, so the replica copies the rest again from its leader.
func TestDamageBelowRecoveryPointIsCutAtNextOpen(t *testing.T) {
	for _, stop := range []string{"close", "crash"} {
		t.Run(stop, func(t *testing.T) {
			fs := vfs.NewMem()
			l := openLog(t, fs, "/p", smallConfig())
			var results []AppendResult
			for i := range 40 {
				results = append(results, mustAppend(t, l, makeBatch(3, 80, int64(i), byte(i)), 1, int64(i)))
			}
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// Damage the fourth batch, in the first (sealed) segment.
			victim := results[3]
			if victim.SegmentBase != 0 || results[len(results)-1].SegmentBase == 0 {
				t.Fatalf("want the victim in a sealed first segment; segments at %d and %d", victim.SegmentBase, results[len(results)-1].SegmentBase)
			}
			if err := fs.Corrupt(segmentFileName("/p", 0, logSuffix), victim.Position+int64(victim.Size)-5, 0x40); err != nil {
				t.Fatal(err)
			}

			l = openLog(t, fs, "/p", smallConfig())
			end := l.LogEndOffset()
			if end != results[len(results)-1].LastOffset+1 {
				t.Fatalf("open after a clean close cut the log to %d: it was not meant to look", end)
			}
			if _, err := l.Read(victim.BaseOffset, 1<<20, end, true); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read over the flipped byte: %v, want ErrCorrupt", err)
			}
			if data, err := l.Read(0, int(victim.Position), end, true); err != nil || len(data) != int(victim.Position) {
				t.Fatalf("read below the damage: %d bytes, %v; want %d", len(data), err, victim.Position)
			}
			// Later writes roll and sync segments; the recovery point must
			// not pass the damage again.
			for i := range 20 {
				mustAppend(t, l, makeBatch(3, 80, int64(100+i), byte(i)), 2, int64(100+i))
			}
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			if stop == "close" {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				fs.Crash(vfs.CrashOptions{})
			}

			l = openLog(t, fs, "/p", smallConfig())
			defer l.Close()
			if got := l.LogEndOffset(); got != victim.BaseOffset {
				t.Fatalf("after the damage was seen, open kept the log to %d; want it cut at the damaged batch, %d", got, victim.BaseOffset)
			}
			if got := len(readAll(t, l)); got != 3 {
				t.Fatalf("%d batches survive, want the 3 before the damage", got)
			}
			if latest, ok := l.Epochs().Latest(); !ok || latest != 1 {
				t.Fatalf("latest epoch after the cut: %d %v, want 1 (epoch 2 began past the cut)", latest, ok)
			}
		})
	}
}

// TestDamagedHeaderFoundByScanIsCutAtNextOpen: a flipped byte in a batch
// header below the recovery point breaks the header walk (rebuilding
// producer state at start-up), which reports ErrCorrupt and notes the
// damage; reopening the log cuts it at that batch, and the walk succeeds.
func TestDamagedHeaderFoundByScanIsCutAtNextOpen(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/p", smallConfig())
	var results []AppendResult
	for i := range 40 {
		results = append(results, mustAppend(t, l, makeBatch(3, 80, int64(i), byte(i)), 1, int64(i)))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	victim := results[5]
	// The low byte of the victim's base offset.
	if err := fs.Corrupt(segmentFileName("/p", 0, logSuffix), victim.Position+7, 0x11); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, fs, "/p", smallConfig())
	count := 0
	err := l.ScanHeaders(0, func(batch.Header) error { count++; return nil })
	if !errors.Is(err, ErrCorrupt) || count != 5 {
		t.Fatalf("scan over a damaged header: %d headers, %v; want 5 and ErrCorrupt", count, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, fs, "/p", smallConfig())
	defer l.Close()
	if got := l.LogEndOffset(); got != victim.BaseOffset {
		t.Fatalf("reopened log ends at %d, want the damaged batch's offset %d", got, victim.BaseOffset)
	}
	if err := l.ScanHeaders(0, func(batch.Header) error { return nil }); err != nil {
		t.Fatalf("scan after the cut: %v", err)
	}
}
