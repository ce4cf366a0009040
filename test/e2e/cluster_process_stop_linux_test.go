package e2e

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// waitStopped blocks until the child process pid has stopped: every one
// of its threads, as the kernel reports a group stop to the parent only
// once the last thread stopped. WNOWAIT leaves the report in place, so
// the exec.Cmd waiting for the exit is not disturbed.
func waitStopped(pid int) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("waitid %d: %w", pid, err)
		}
		return nil
	}
}
