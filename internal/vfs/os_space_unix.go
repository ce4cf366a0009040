//go:build unix

package vfs

import (
	"fmt"
	"syscall"
)

// Space implements FS with statfs(2).
func (OS) Space(dir string) (Space, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return Space{}, fmt.Errorf("statfs %s: %w", dir, err)
	}
	bs := uint64(st.Bsize)
	return Space{Total: int64(uint64(st.Blocks) * bs), Free: int64(uint64(st.Bavail) * bs)}, nil
}
