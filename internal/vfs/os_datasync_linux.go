package vfs

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Datasync is fdatasync(2) (see the package function Datasync).
func (f osFile) Datasync() error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			// Retried on EINTR, as os.File.Sync does.
			if serr = unix.Fdatasync(int(fd)); !errors.Is(serr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	if serr != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), serr)
	}
	return nil
}
