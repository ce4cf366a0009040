//go:build !linux

package devcluster

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts a node in a process group of its own, so a Ctrl-C at
// the terminal reaches only the manager, which stops the nodes in order.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// waitStopped has no waitid to wait with here: Pause returns once
// SIGSTOP is sent, and the process may run a moment longer.
func waitStopped(int) error { return nil }
