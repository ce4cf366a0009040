//go:build !linux

package vfs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// SyncFS implements FS where syncfs(2) is missing: every file and directory
// below dir is fsynced, which is what the callers need of it.
func (OS) SyncFS(dir string) error {
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("sync %s: %w", p, err)
		}
		return nil
	})
}
