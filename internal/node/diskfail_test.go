package node

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/replica"
	"github.com/skein-log/skein/internal/storage"
)

// TestIsDiskFailure: write and fsync errors take a log directory offline;
// refusals of the data or of the caller say nothing about the disk, and a
// write that found the disk full (and was undone) only fails itself.
func TestIsDiskFailure(t *testing.T) {
	pathErr := func(errno syscall.Errno) error {
		return fmt.Errorf("append to x.log at 7: %w", &os.PathError{Op: "write", Path: "x.log", Err: errno})
	}
	cases := []struct {
		err  error
		want bool
	}{
		{pathErr(syscall.ENOSPC), false}, // full, not failed: diskspace.go
		{pathErr(syscall.EDQUOT), false},
		{fmt.Errorf("%w: dir: undo failed write: %w", storage.ErrLogFailed, pathErr(syscall.ENOSPC)), true},
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
		if got := replica.IsDiskFailure(c.err); got != c.want {
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

// TestStorageErrorAnswerHeldWithoutHandover: a storage error answer on a
// broker with nothing to hand over (a single broker) is still held, so the
// stop's wait for held answers returns only once it is given, and the
// connection is not closed first (the client saw EOF instead of
// KAFKA_STORAGE_ERROR, now and then, when it was answered on a goroutine
// nobody waited for).
func TestStorageErrorAnswerHeldWithoutHandover(t *testing.T) {
	cfg, err := config.NewBroker(map[string]string{
		"node.id": "1", "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0", "log.dirs": t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	b := &Broker{cfg: cfg} // not started: no image, no other broker
	dir := "/data"
	b.offlineDir.Store(&dir)
	if b.canHandOver() {
		t.Fatal("a broker with no image can hand over")
	}
	var got atomic.Pointer[error]
	storageErr := fmt.Errorf("%w: fsync: EIO", kerr.KafkaStorageError)
	b.answerAfterHandover(nil, storageErr, func(err error) {
		runtime.Gosched() // let the waiter run first if it does not wait
		got.Store(&err)
	})
	b.waitHandoverAnswers()
	if p := got.Load(); p == nil || !errors.Is(*p, kerr.KafkaStorageError) {
		t.Fatalf("the wait for held answers returned before the storage error was given (got %v)", p)
	}
	// Once the stop has waited, later answers are not held (nothing would
	// wait for them) but still given.
	later := make(chan error, 1)
	b.answerAfterHandover(nil, storageErr, func(err error) { later <- err })
	if err := <-later; !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("a later answer: %v", err)
	}
}
