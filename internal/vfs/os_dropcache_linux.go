package vfs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// DropCache is posix_fadvise(2) with POSIX_FADV_DONTNEED (see the package
// function DropCache). The kernel drops the clean pages of the range at
// once, so the next page the broker's page-cache copy needs can reuse one
// of them instead of faulting a fresh page in (on a VM with free page
// reporting, a wait for the host).
func (f osFile) DropCache(off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("fadvise %s: %w", f.Name(), err)
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		ferr = unix.Fadvise(int(fd), off, n, unix.FADV_DONTNEED)
	}); err != nil {
		return fmt.Errorf("fadvise %s: %w", f.Name(), err)
	}
	if ferr != nil {
		return fmt.Errorf("fadvise %s [%d, %d): %w", f.Name(), off, off+n, ferr)
	}
	return nil
}
