package storage

import (
	"fmt"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

// freshOptions is quietOptions for a log the caller just created.
func freshOptions() Options {
	o := quietOptions()
	o.Fresh = true
	return o
}

// TestOpenFreshMakesNoFsync: a fresh log is created without a sync of
// its own (the caller's SyncFS covers it); its first Sync has nothing to do.
func TestOpenFreshMakesNoFsync(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/d/p-0", 0o755); err != nil {
		t.Fatal(err)
	}
	syncs := 0
	fs.SetFault(func(op vfs.Op, path string) error {
		if op == vfs.OpSync || op == vfs.OpSyncDir || op == vfs.OpSyncFS {
			syncs++
		}
		return nil
	})
	l, err := Open(fs, "/d/p-0", smallConfig(), freshOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if syncs != 0 {
		t.Fatalf("a fresh open and its first Sync made %d syncs, want 0", syncs)
	}
	fs.SetFault(nil)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenFreshPowerCut cuts the power at every filesystem call of a
// fresh open and of the SyncFS after it, torn writes included: the log
// opens again from whatever is left, empty; after the SyncFS returns, a
// power cut keeps the log's files, and records appended and synced after
// it survive another.
func TestOpenFreshPowerCut(t *testing.T) {
	for at := 1; ; at++ {
		fs := vfs.NewMem()
		if err := fs.MkdirAll("/d/p-0", 0o755); err != nil {
			t.Fatal(err)
		}
		c := &crasher{fs: fs, at: at, opts: vfs.CrashOptions{TornWrites: true, Seed: uint64(at)}}
		fs.SetFault(c.fault)
		// The log is dropped, not closed: the power cut after it (or
		// during it) invalidates its handles.
		_, err := Open(fs, "/d/p-0", smallConfig(), freshOptions())
		if err == nil {
			err = fs.SyncFS("/d")
		}
		fs.SetFault(nil)
		if !c.crashed {
			if err != nil {
				t.Fatal(err)
			}
			// The SyncFS returned: a power cut loses nothing of the new log.
			fs.Crash(vfs.CrashOptions{TornWrites: true, Seed: uint64(at)})
			entries, err := fs.ReadDir("/d/p-0")
			if err != nil || len(entries) == 0 {
				t.Fatalf("after the SyncFS and a power cut the log's directory holds %v (%v)", entries, err)
			}
			checkReopensEmptyAndDurable(t, fs)
			if at < 3 {
				t.Fatalf("a fresh open and its SyncFS made only %d filesystem calls", at-1)
			}
			return
		}
		t.Run(fmt.Sprintf("cut=%d", at), func(t *testing.T) {
			if err == nil {
				t.Fatal("no error although the filesystem lost power")
			}
			checkReopensEmptyAndDurable(t, fs)
		})
	}
}

// checkReopensEmptyAndDurable opens the log in /d/p-0 as a broker does
// one found on disk (not fresh), expects it empty, appends and syncs a
// batch, and checks it survives a power cut.
func checkReopensEmptyAndDurable(t *testing.T, fs *vfs.Mem) {
	t.Helper()
	l := openLog(t, fs, "/d/p-0", smallConfig())
	if end := l.LogEndOffset(); end != 0 {
		t.Fatalf("reopened log ends at %d, want 0", end)
	}
	b := makeBatch(3, 10, 1000, 1)
	mustAppend(t, l, b, 0, 1000)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	fs.Crash(vfs.CrashOptions{TornWrites: true, Seed: 7})
	l = openLog(t, fs, "/d/p-0", smallConfig())
	sameBatches(t, readAll(t, l), [][]byte{b}, "after a synced append and a power cut")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenFreshOfALogOnDisk: Fresh does not skip the recovery sync of a
// log that already has a segment: a cleanly closed log opened with it has
// its marker durably removed, as without it.
func TestOpenFreshOfALogOnDisk(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/d/p-0", smallConfig())
	b := makeBatch(2, 10, 1000, 1)
	mustAppend(t, l, b, 0, 1000)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Dropped, not closed: the power cut invalidates its handles.
	if _, err := Open(fs, "/d/p-0", smallConfig(), freshOptions()); err != nil {
		t.Fatal(err)
	}
	fs.Crash(vfs.CrashOptions{})
	if ok, err := vfs.Exists(fs, "/d/p-0/"+cleanShutdownFile); ok || err != nil {
		t.Fatalf("clean-shutdown marker still on disk after a fresh open of a log found on disk (%v)", err)
	}
	l = openLog(t, fs, "/d/p-0", smallConfig())
	sameBatches(t, readAll(t, l), [][]byte{b}, "reopened")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
