package storage

import (
	"sync"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

// TestGroupCommitConcurrent runs an appender, a flusher calling Sync in a
// loop and a reader at once (meaningful under -race): durable end only
// grows and never passes the log end, and reads never fail.
func TestGroupCommitConcurrent(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "/p", smallConfig())
	defer l.Close()
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	wg.Add(2)
	go func() { // flusher
		defer wg.Done()
		last := int64(0)
		for {
			select {
			case <-done:
				return
			default:
			}
			end, err := l.Sync()
			if err != nil {
				errs <- err
				return
			}
			if end < last || end > l.LogEndOffset() {
				t.Errorf("durable end %d (was %d, log end %d)", end, last, l.LogEndOffset())
				return
			}
			last = end
		}
	}()
	go func() { // reader
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			end := l.LogEndOffset()
			if _, err := l.Read(end/2, 4096, end, true); err != nil {
				errs <- err
				return
			}
		}
	}()
	for i := range 400 {
		if _, err := l.Append(makeBatch(2, 64, int64(i), byte(i)), 0, 0); err != nil {
			t.Error(err)
			break
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if end, err := l.Sync(); err != nil || end != l.LogEndOffset() {
		t.Fatalf("final sync %d of %d: %v", end, l.LogEndOffset(), err)
	}
}
