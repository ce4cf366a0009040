package node

import (
	"io"
	"os"
	"syscall"
)

// processOpenFiles counts /proc/self/fd and reads RLIMIT_NOFILE.
func processOpenFiles() (open, limit int, ok bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return 0, 0, false
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, 0, false
	}
	defer d.Close()
	for {
		names, err := d.Readdirnames(4096)
		open += len(names)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, 0, false
		}
	}
	// The directory's own descriptor is counted but closes on return.
	return open - 1, int(rl.Cur), true
}
