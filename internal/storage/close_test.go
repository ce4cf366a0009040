package storage

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

// reopenAfterPowerLoss crashes fs (only what was made durable survives),
// reopens the log in dir and returns it with what the open logged.
func reopenAfterPowerLoss(t *testing.T, fs *vfs.Mem, dir string) (*Log, string) {
	t.Helper()
	fs.Crash(vfs.CrashOptions{})
	var out bytes.Buffer
	l, err := Open(fs, dir, smallConfig(), Options{Logger: slog.New(slog.NewTextHandler(&out, nil))})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	return l, out.String()
}

func exists(t *testing.T, fs vfs.FS, path string) bool {
	t.Helper()
	ok, err := vfs.Exists(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// A clean close of an empty log writes no index files (there is nothing to
// index) and its marker survives a power loss; the next open trusts the log
// without rebuilding anything. Once the segment holds a batch, or held one
// and was truncated to empty, the close writes the index files again.
func TestCloseOfEmptyLogWritesNoIndexFiles(t *testing.T) {
	fs := vfs.NewMem()
	dir := "/data/t-0"
	index := segmentFileName(dir, 0, indexSuffix)
	timeIndex := segmentFileName(dir, 0, timeIndexSuffix)
	marker := filepath.Join(dir, cleanShutdownFile)

	l := openLog(t, fs, dir, smallConfig())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(t, fs, index) || exists(t, fs, timeIndex) {
		t.Fatal("closing an empty log wrote index files")
	}
	l, logged := reopenAfterPowerLoss(t, fs, dir)
	if logged != "" {
		t.Fatalf("reopening a cleanly closed empty log logged:\n%s", logged)
	}
	if exists(t, fs, marker) {
		t.Fatal("the clean-shutdown marker is still there after the open")
	}

	// A batch: the close must write both index files (the time index
	// holds the segment's max timestamp), and the reopen trusts them.
	// Two batches larger than the index interval: the second one is
	// indexed.
	mustAppend(t, l, makeBatch(3, 200, 1_000, 1), 0, 1_000)
	mustAppend(t, l, makeBatch(3, 200, 1_003, 2), 0, 1_003)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !exists(t, fs, index) || !exists(t, fs, timeIndex) {
		t.Fatal("closing a log with a batch left no index files")
	}
	l, logged = reopenAfterPowerLoss(t, fs, dir)
	if logged != "" || l.LogEndOffset() != 6 {
		t.Fatalf("reopen: log end %d, logged:\n%s", l.LogEndOffset(), logged)
	}

	// Truncated back to empty: the files on disk still index the batches,
	// so the close rewrites them (empty), and the reopen is clean again.
	if err := l.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, logged = reopenAfterPowerLoss(t, fs, dir)
	if logged != "" || l.LogEndOffset() != 0 {
		t.Fatalf("reopen after truncation: log end %d, logged:\n%s", l.LogEndOffset(), logged)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// An empty segment's missing index files mean empty indexes only when the
// log was closed cleanly and the segment really is empty: a non-empty
// segment without them is rebuilt.
func TestMissingIndexFilesOfNonEmptySegmentAreRebuilt(t *testing.T) {
	fs := vfs.NewMem()
	dir := "/data/t-0"
	l := openLog(t, fs, dir, smallConfig())
	mustAppend(t, l, makeBatch(3, 10, 1_000, 1), 0, 1_000)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{segmentFileName(dir, 0, indexSuffix), segmentFileName(dir, 0, timeIndexSuffix)} {
		if err := fs.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	l, logged := reopenAfterPowerLoss(t, fs, dir)
	if !strings.Contains(logged, "rebuilding segment indexes") || l.LogEndOffset() != 3 {
		t.Fatalf("reopen: log end %d, logged:\n%s", l.LogEndOffset(), logged)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// CloseLeavingDirSync leaves the marker's directory entry to one SyncFS:
// a power loss before it loses the marker (the next open re-validates,
// and finds every record, all fsynced before the marker was made); after
// it the marker holds and the open trusts the log.
func TestCloseLeavingDirSyncThenSyncFS(t *testing.T) {
	for _, syncFS := range []bool{false, true} {
		fs := vfs.NewMem()
		dir := "/data/t-0"
		l := openLog(t, fs, dir, smallConfig())
		mustAppend(t, l, makeBatch(3, 200, 1_000, 1), 0, 1_000)
		mustAppend(t, l, makeBatch(3, 200, 1_003, 2), 0, 1_003)
		if err := l.CloseLeavingDirSync(); err != nil {
			t.Fatal(err)
		}
		if syncFS {
			if err := fs.SyncFS("/data"); err != nil {
				t.Fatal(err)
			}
		}
		marker := exists(t, fs, filepath.Join(dir, cleanShutdownFile))
		fs.Crash(vfs.CrashOptions{})
		if got := exists(t, fs, filepath.Join(dir, cleanShutdownFile)); got != syncFS || !marker {
			t.Fatalf("SyncFS %v: marker before the crash %v, after %v", syncFS, marker, got)
		}
		var out bytes.Buffer
		l, err := Open(fs, dir, smallConfig(), Options{Logger: slog.New(slog.NewTextHandler(&out, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if l.LogEndOffset() != 6 || (syncFS && out.Len() > 0) {
			t.Fatalf("SyncFS %v: log end %d, open logged:\n%s", syncFS, l.LogEndOffset(), out.String())
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
