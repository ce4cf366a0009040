package vfs

import (
	"fmt"
	"path/filepath"
)

// MkdirAllDurably creates dir and its missing parents, then syncs the parent
// of every directory it created: a new directory's entry is not durable
// until its parent is synced (a log directory created at a broker's first
// start, before its metadata quorum writes in it, included).
func MkdirAllDurably(fs FS, dir string) error {
	var created []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		exists, err := Exists(fs, d)
		if err != nil {
			return fmt.Errorf("stat %s: %w", d, err)
		}
		if exists {
			break
		}
		created = append(created, d)
		if parent := filepath.Dir(d); parent == d {
			break
		}
	}
	if len(created) == 0 {
		return nil
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	// Sync from the top down, so each parent's entry is durable before the
	// child's, and finally the new directory itself.
	for i := len(created) - 1; i >= 0; i-- {
		parent := filepath.Dir(created[i])
		if err := fs.SyncDir(parent); err != nil {
			return fmt.Errorf("sync dir %s: %w", parent, err)
		}
	}
	return nil
}
