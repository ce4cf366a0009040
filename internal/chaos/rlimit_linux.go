package chaos

import "golang.org/x/sys/unix"

// limitFileSize sets the soft RLIMIT_FSIZE of process pid: writes past
// limit bytes into any file then fail with EFBIG (Go ignores SIGXFSZ).
// Lowering a limit of one's own process needs no privilege.
func limitFileSize(pid int, limit uint64) error {
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, nil, &old); err != nil {
		return err
	}
	next := unix.Rlimit{Cur: min(limit, old.Max), Max: old.Max}
	return unix.Prlimit(pid, unix.RLIMIT_FSIZE, &next, nil)
}

// liftFileSizeLimit raises the soft RLIMIT_FSIZE of pid back to its hard
// limit.
func liftFileSizeLimit(pid int) error {
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, nil, &old); err != nil {
		return err
	}
	next := unix.Rlimit{Cur: old.Max, Max: old.Max}
	return unix.Prlimit(pid, unix.RLIMIT_FSIZE, &next, nil)
}
