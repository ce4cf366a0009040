package vfs_test

import (
	"errors"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

// TestFSSyncsOncePerDirectory: a batch calls SyncFS once per directory and
// answers every later Sync of it with that first result, errors included.
func TestFSSyncsOncePerDirectory(t *testing.T) {
	m := vfs.NewMem()
	must(t, m.MkdirAll("/a", 0o755))
	must(t, m.MkdirAll("/b", 0o755))
	broken := errors.New("disk gone")
	calls := map[string]int{}
	m.SetFault(func(op vfs.Op, path string) error {
		if op != vfs.OpSyncFS {
			return nil
		}
		calls[path]++
		if path == "/b" {
			return broken
		}
		return nil
	})
	syncs := vfs.NewFSSyncs(m)
	for range 3 {
		must(t, syncs.Sync("/a"))
		if err := syncs.Sync("/b"); !errors.Is(err, broken) {
			t.Fatalf("Sync(/b) = %v, want %v", err, broken)
		}
	}
	if calls["/a"] != 1 || calls["/b"] != 1 {
		t.Fatalf("SyncFS calls %v, want one per directory", calls)
	}
	// A new batch syncs again.
	must(t, vfs.NewFSSyncs(m).Sync("/a"))
	if calls["/a"] != 2 {
		t.Fatalf("a new batch made %d SyncFS calls of /a in all, want 2", calls["/a"])
	}
}
