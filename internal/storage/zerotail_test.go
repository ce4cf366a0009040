package storage

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

// zeroTailConfig has segments large enough for a whole window.
func zeroTailConfig() Config {
	cfg := smallConfig()
	cfg.SegmentBytes = 4 << 20
	return cfg
}

// fileLen is the current (not necessarily durable) length of a file.
func fileLen(t *testing.T, fs vfs.FS, path string) int64 {
	t.Helper()
	st, err := fs.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size
}

// activeLogPath is the path of the log's active segment file.
func activeLogPath(l *Log) string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.active().logPath()
}

// syncLoneRecords appends n lone records, each synced, and returns them.
func syncLoneRecords(t *testing.T, l *Log, n int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := range n {
		b := makeBatch(1, 100, int64(i), byte(i))
		mustAppend(t, l, b, 0, 0)
		mustSync(t, l)
		out = append(out, b)
	}
	return out
}

// writeBehind writes data at pos of the file at path and syncs it, behind
// the log's back: what a crash may leave on the disk.
func writeBehind(t *testing.T, fs vfs.FS, path string, data []byte, pos int64) {
	t.Helper()
	f, err := fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(data, pos); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// A Sync that covered a lone batch leaves a zero-filled window after the
// log end; one that covered bulk appends does not. Neither shows in Size
// or in reads.
func TestZeroTailRefilledAfterSmallSyncsOnly(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/data/p0", zeroTailConfig())
	defer l.Close()
	path := activeLogPath(l)

	bulk := makeBatch(40, 1000, 0, 1) // > zeroSmallSync
	mustAppend(t, l, bulk, 0, 0)
	mustSync(t, l)
	if got, want := fileLen(t, fs, path), int64(len(bulk)); got != want {
		t.Fatalf("after a bulk sync the file is %d bytes, want %d (no window)", got, want)
	}

	lone := makeBatch(1, 100, 1, 2)
	mustAppend(t, l, lone, 0, 0)
	mustSync(t, l)
	size := l.Size()
	if size != int64(len(bulk)+len(lone)) {
		t.Fatalf("Size %d, want %d", size, len(bulk)+len(lone))
	}
	if got, want := fileLen(t, fs, path), size+zeroWindowBytes; got != want {
		t.Fatalf("after a lone sync the file is %d bytes, want %d (log end + window)", got, want)
	}

	// Appends overwrite the window; it is refilled only once less than
	// half of it is left.
	var want [][]byte
	want = append(want, bulk, lone)
	for i := range 5 {
		b := makeBatch(1, 100, int64(2+i), byte(3+i))
		mustAppend(t, l, b, 0, 0)
		mustSync(t, l)
		want = append(want, b)
	}
	if got, want := fileLen(t, fs, path), size+zeroWindowBytes; got != want {
		t.Fatalf("the window moved: file %d bytes, want %d", got, want)
	}
	sameBatches(t, readAll(t, l), want, "read over the window")
	if l.Size() >= fileLen(t, fs, path) {
		t.Fatalf("Size %d counts the window", l.Size())
	}
}

// The window stays within segment.bytes.
func TestZeroTailWithinSegmentBytes(t *testing.T) {
	fs := vfs.NewMem()
	cfg := zeroTailConfig()
	cfg.SegmentBytes = 3000
	l := openLog(t, fs, "/data/p0", cfg)
	defer l.Close()
	mustAppend(t, l, makeBatch(1, 100, 0, 1), 0, 0)
	mustSync(t, l)
	if got := fileLen(t, fs, activeLogPath(l)); got != cfg.SegmentBytes {
		t.Fatalf("file is %d bytes, want segment.bytes %d", got, cfg.SegmentBytes)
	}
}

// A roll and a clean close leave every file ending at its last batch; the
// next open trusts the cleanly closed log (no recovery) and finds the same
// log.
func TestZeroTailCutByRollAndClose(t *testing.T) {
	fs := vfs.NewMem()
	cfg := zeroTailConfig()
	cfg.SegmentBytes = 64 << 10
	l := openLog(t, fs, "/data/p0", cfg)
	var want [][]byte
	for i := 0; l.active().base == 0; i++ {
		b := makeBatch(1, 3000, int64(i), byte(i))
		mustAppend(t, l, b, 0, 0)
		mustSync(t, l)
		want = append(want, b)
	}
	first := segmentFileName("/data/p0", 0, logSuffix)
	var sealed int64
	for _, b := range want[:len(want)-1] {
		sealed += int64(len(b))
	}
	if got := fileLen(t, fs, first); got != sealed {
		t.Fatalf("rolled segment is %d bytes, its batches %d", got, sealed)
	}
	active := activeLogPath(l)
	if fileLen(t, fs, active) <= int64(len(want[len(want)-1])) {
		t.Fatalf("no window on the new active segment after a lone sync")
	}
	end := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := fileLen(t, fs, active), int64(len(want[len(want)-1])); got != want {
		t.Fatalf("closed active segment is %d bytes, its batch %d", got, want)
	}
	if !exists(t, fs, filepath.Join("/data/p0", cleanShutdownFile)) {
		t.Fatal("no clean-shutdown marker")
	}
	// The cut is durable with the marker.
	fs.Crash(vfs.CrashOptions{})
	var out bytes.Buffer
	l2, err := Open(fs, "/data/p0", cfg, Options{Logger: slog.New(slog.NewTextHandler(&out, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if strings.Contains(out.String(), "zero-filled") || strings.Contains(out.String(), "truncating") || strings.Contains(out.String(), "re-validating") {
		t.Fatalf("a clean open recovered something:\n%s", out.String())
	}
	if l2.LogEndOffset() != end {
		t.Fatalf("log end %d after a clean reopen, want %d", l2.LogEndOffset(), end)
	}
	sameBatches(t, readAll(t, l2), want, "after the clean reopen")
}

// Power cuts with a durable window and unsynced appends over it (lost
// whole, or torn part-way): recovery keeps every synced batch, cuts the
// file at the last whole batch, and the log goes on.
func TestZeroTailPowerCut(t *testing.T) {
	for _, tc := range []struct {
		name string
		// overwrite runs on the recovered-to-be log after the window is
		// durable, writing what the disk is to hold past the durable end.
		overwrite func(t *testing.T, fs *vfs.Mem, l *Log, b []byte)
		wantLog   string // in what the reopen logged
	}{
		{"unsynced appends lost", func(t *testing.T, fs *vfs.Mem, l *Log, b []byte) {
			mustAppend(t, l, b, 0, 0)
		}, "zero-filled window"},
		{"zero tail only", func(t *testing.T, fs *vfs.Mem, l *Log, b []byte) {}, "zero-filled window"},
		{"half a batch over the zeros reached the disk", func(t *testing.T, fs *vfs.Mem, l *Log, b []byte) {
			// A torn overwrite: the disk holds the first half of the
			// batch over the zeros (vfs.Mem loses unsynced overwrites
			// whole, so it is written and synced behind the log's back).
			writeBehind(t, fs, activeLogPath(l), b[:len(b)/2], l.Size())
		}, "truncating damaged log tail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			cfg := zeroTailConfig()
			l := openLog(t, fs, "/data/p0", cfg)
			want := syncLoneRecords(t, l, 3) // the second sync makes the window durable
			durable := l.DurableEndOffset()
			size := l.Size()
			// The first sync filled the window; the next made it durable.
			windowEnd := int64(len(want[0])) + zeroWindowBytes
			if got := fileLen(t, fs, activeLogPath(l)); got != windowEnd {
				t.Fatalf("file is %d bytes, want %d", got, windowEnd)
			}
			tc.overwrite(t, fs, l, makeBatch(2, 300, 9, 9))
			fs.Crash(vfs.CrashOptions{TornWrites: true, Seed: 1})
			if got := fileLen(t, fs, activeLogPath(l)); got != windowEnd {
				t.Fatalf("after the crash the file is %d bytes, want the durable window's %d", got, windowEnd)
			}
			var out bytes.Buffer
			l2, err := Open(fs, "/data/p0", cfg, Options{Logger: slog.New(slog.NewTextHandler(&out, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			if !strings.Contains(out.String(), tc.wantLog) {
				t.Fatalf("reopen logged no %q:\n%s", tc.wantLog, out.String())
			}
			if l2.LogEndOffset() != durable {
				t.Fatalf("log end %d, want the durable end %d", l2.LogEndOffset(), durable)
			}
			if got := fileLen(t, fs, activeLogPath(l2)); got != size {
				t.Fatalf("recovered file is %d bytes, its batches %d", got, size)
			}
			sameBatches(t, readAll(t, l2), want, "recovered")
			b := makeBatch(1, 50, 20, 20)
			mustAppend(t, l2, b, 0, 0)
			mustSync(t, l2)
			sameBatches(t, readAll(t, l2), append(want, b), "appended after recovery")
		})
	}
}

// A sealed segment that a crash left with its window (a roll's cut not yet
// durable) is cut at its last batch without counting as damage: the
// segments after it stay.
func TestZeroTailInSealedSegmentKeepsLaterSegments(t *testing.T) {
	fs := vfs.NewMem()
	cfg := zeroTailConfig()
	cfg.SegmentBytes = 8 << 10
	l := openLog(t, fs, "/data/p0", cfg)
	var want [][]byte
	for i := 0; len(l.segments) < 3; i++ {
		b := makeBatch(1, 1000, int64(i), byte(i))
		mustAppend(t, l, b, 0, 0)
		want = append(want, b)
	}
	mustSync(t, l)
	end := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// What the crash leaves: the first segment's window, no marker, and
	// a recovery point that has both segments re-validated.
	first := segmentFileName("/data/p0", 0, logSuffix)
	n := fileLen(t, fs, first)
	writeBehind(t, fs, first, make([]byte, 5000), n)
	for _, name := range []string{cleanShutdownFile, recoveryPointFile} {
		if err := fs.Remove(filepath.Join("/data/p0", name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.SyncDir("/data/p0"); err != nil {
		t.Fatal(err)
	}
	fs.Crash(vfs.CrashOptions{})
	l2 := openLog(t, fs, "/data/p0", cfg)
	defer l2.Close()
	if l2.LogEndOffset() != end || len(l2.segments) != 3 {
		t.Fatalf("log end %d in %d segments, want %d in 3", l2.LogEndOffset(), len(l2.segments), end)
	}
	if got := fileLen(t, fs, first); got != n {
		t.Fatalf("first segment is %d bytes, its batches %d", got, n)
	}
	sameBatches(t, readAll(t, l2), want, "recovered")
}

// A failed write of the window (a full disk) costs the window only: the
// file is cut back, Sync succeeds, and the log goes on.
func TestZeroTailWriteFailure(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/data/p0", zeroTailConfig())
	defer l.Close()
	path := activeLogPath(l)
	b := makeBatch(1, 100, 0, 1)
	mustAppend(t, l, b, 0, 0)
	errFull := errors.New("no space left on device")
	fs.SetFault(func(op vfs.Op, p string) error {
		if op == vfs.OpWrite && p == path {
			return errFull
		}
		return nil
	})
	end, err := l.Sync()
	fs.SetFault(nil)
	if err != nil || end != l.LogEndOffset() {
		t.Fatalf("sync: end %d, %v", end, err)
	}
	if got := fileLen(t, fs, path); got != l.Size() {
		t.Fatalf("file is %d bytes after a failed window write, batches %d", got, l.Size())
	}
	b2 := makeBatch(1, 100, 1, 2)
	mustAppend(t, l, b2, 0, 0)
	mustSync(t, l)
	sameBatches(t, readAll(t, l), [][]byte{b, b2}, "after the failure")
	if fileLen(t, fs, path) != l.Size()+zeroWindowBytes {
		t.Fatalf("no window after the next lone sync: file %d, size %d", fileLen(t, fs, path), l.Size())
	}
}

// A clean-shutdown marker vouches only for a file that ends at its last
// batch: zeros found after a cleanly closed segment's batches (a window no
// close should leave) make the open re-validate the segment and cut them.
func TestZeroTailAfterCleanCloseIsRevalidated(t *testing.T) {
	fs := vfs.NewMem()
	cfg := zeroTailConfig()
	l := openLog(t, fs, "/data/p0", cfg)
	want := syncLoneRecords(t, l, 3)
	path := activeLogPath(l)
	size := l.Size()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	writeBehind(t, fs, path, make([]byte, 4096), size)
	if !exists(t, fs, filepath.Join("/data/p0", cleanShutdownFile)) {
		t.Fatal("no clean-shutdown marker")
	}
	var out bytes.Buffer
	l2, err := Open(fs, "/data/p0", cfg, Options{Logger: slog.New(slog.NewTextHandler(&out, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if !strings.Contains(out.String(), "re-validating") || !strings.Contains(out.String(), "zero-filled window") {
		t.Fatalf("open did not re-validate and cut the zeros:\n%s", out.String())
	}
	if got := fileLen(t, fs, path); got != size {
		t.Fatalf("file is %d bytes after the open, its batches %d", got, size)
	}
	sameBatches(t, readAll(t, l2), want, "reopened")
}

// The window is written only when Options.MayFillAhead allows its bytes
// (the broker's free-space floor counts them through it), and asked for
// exactly what the refill writes.
func TestZeroTailAsksMayFillAhead(t *testing.T) {
	fs := vfs.NewMem()
	var asked []int64
	allow := false
	l, err := Open(fs, "/data/p0", zeroTailConfig(), Options{MayFillAhead: func(n int64) bool {
		asked = append(asked, n)
		return allow
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	path := activeLogPath(l)

	lone := makeBatch(1, 100, 0, 1)
	mustAppend(t, l, lone, 0, 0)
	mustSync(t, l)
	if got, want := fileLen(t, fs, path), int64(len(lone)); got != want {
		t.Fatalf("refused window: file is %d bytes, want %d (no window)", got, want)
	}
	if len(asked) != 1 || asked[0] != zeroWindowBytes {
		t.Fatalf("asked %v, want one ask for %d bytes", asked, zeroWindowBytes)
	}

	allow = true
	next := makeBatch(1, 100, 1, 2)
	mustAppend(t, l, next, 0, 0)
	mustSync(t, l)
	if got, want := fileLen(t, fs, path), l.Size()+zeroWindowBytes; got != want {
		t.Fatalf("allowed window: file is %d bytes, want %d", got, want)
	}
	if len(asked) != 2 || asked[1] != zeroWindowBytes {
		t.Fatalf("asked %v, want a second ask for %d bytes", asked, zeroWindowBytes)
	}
	sameBatches(t, readAll(t, l), [][]byte{lone, next}, "read after the window")
}
