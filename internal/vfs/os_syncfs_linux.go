package vfs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// SyncFS implements FS with syncfs(2) on dir.
func (OS) SyncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	return nil
}
