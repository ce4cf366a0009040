package vfs

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Datasync is fdatasync(2) (see the package function Datasync), submitted
// through the FS's ring when it has one. Either way its error is the
// fsync's, and the data is as durable.
func (f osFile) Datasync() error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	var serr error
	// Inside Control while the ring's fsync runs too: the descriptor
	// stays open (a concurrent Close waits), as it does for the call.
	if err := rc.Control(func(fd uintptr) {
		if f.ring != nil {
			var ok bool
			if ok, serr = f.ring.datasync(int(fd)); ok {
				return
			}
		}
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
