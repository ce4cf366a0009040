package node

import (
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/skein-log/skein/internal/storage"
)

// TestIsDiskFailure: write and fsync errors take a log directory offline;
// refusals of the data or of the caller say nothing about the disk.
func TestIsDiskFailure(t *testing.T) {
	pathErr := func(errno syscall.Errno) error {
		return fmt.Errorf("append to x.log at 7: %w", &os.PathError{Op: "write", Path: "x.log", Err: errno})
	}
	cases := []struct {
		err  error
		want bool
	}{
		{pathErr(syscall.ENOSPC), true},
		{pathErr(syscall.EFBIG), true},
		{pathErr(syscall.EIO), true},
		{fmt.Errorf("%w: dir: %w", storage.ErrLogFailed, pathErr(syscall.EIO)), true},
		{nil, false},
		{fmt.Errorf("%w: bad crc", storage.ErrInvalidBatch), false},
		{fmt.Errorf("%w: 2 MiB", storage.ErrBatchTooLarge), false},
		{fmt.Errorf("%w: epoch 3 < 4", storage.ErrStaleEpoch), false},
		{fmt.Errorf("%w: at 9", storage.ErrOffsetMismatch), false},
		{fmt.Errorf("%w: segment 0", storage.ErrCorrupt), false},
		{fmt.Errorf("dir: %w", storage.ErrClosed), false},
	}
	for _, c := range cases {
		if got := isDiskFailure(c.err); got != c.want {
			t.Errorf("isDiskFailure(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestIsDeviceError: opening a log takes the directory offline only for
// errors of the device.
func TestIsDeviceError(t *testing.T) {
	open := func(err error) error {
		return fmt.Errorf("open log d: %w", &os.PathError{Op: "open", Path: "d/0.log", Err: err})
	}
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.ENOSPC, syscall.EFBIG, syscall.EDQUOT, syscall.EROFS} {
		if !isDeviceError(open(errno)) {
			t.Errorf("isDeviceError(%v) = false, want true", open(errno))
		}
	}
	for _, err := range []error{nil, open(os.ErrNotExist), open(syscall.EACCES), fmt.Errorf("%w: segment 0", storage.ErrCorrupt)} {
		if isDeviceError(err) {
			t.Errorf("isDeviceError(%v) = true, want false", err)
		}
	}
}
