package devcluster

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// setProcAttr puts a node in a process group of its own, so a Ctrl-C at
// the terminal reaches only the manager, which stops the nodes in order,
// and has the kernel kill the node if the manager dies without stopping
// it: no node outlives the cluster that started it.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

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
