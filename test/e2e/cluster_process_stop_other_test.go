//go:build !linux

package e2e

// waitStopped has no waitid to wait with here: pause returns once
// SIGSTOP is sent, and the process may run a moment longer.
func waitStopped(int) error { return nil }
