package vfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openRing opens a ring or skips where the kernel refuses io_uring (the
// fallback has its own test below).
func openRing(t *testing.T) *FsyncRing {
	t.Helper()
	r, err := OpenFsyncRing()
	if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM) {
		t.Skipf("io_uring unavailable here: %v", err)
	}
	if err != nil {
		t.Fatalf("open ring: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func writeFile(t *testing.T, fs FS, name string) File {
	t.Helper()
	f, err := Create(fs, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Write([]byte("record")); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFsyncRingDatasync(t *testing.T) {
	r := openRing(t)
	f := writeFile(t, OS{Ring: r}, filepath.Join(t.TempDir(), "f"))
	for range 3 {
		if err := Datasync(f); err != nil {
			t.Fatalf("datasync: %v", err)
		}
	}
	if n := r.Fallbacks(); n != 0 {
		t.Fatalf("%d fsyncs fell back to fdatasync(2)", n)
	}
}

// The CQE's error is the one fdatasync(2) gives for the same descriptor:
// a pipe cannot be synced (EINVAL), a closed descriptor is EBADF.
func TestFsyncRingErrorIsFdatasyncs(t *testing.T) {
	r := openRing(t)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	want := unix.Fdatasync(p[0])
	if want == nil {
		t.Fatal("fdatasync of a pipe succeeded")
	}
	ok, err := r.datasync(p[0])
	if !ok {
		t.Fatal("the ring did not take the fsync")
	}
	if !errors.Is(err, want) {
		t.Fatalf("ring fsync of a pipe: %v, fdatasync(2): %v", err, want)
	}

	// A descriptor number nothing has open.
	bad := p[1] + 1000
	if err := unix.Fdatasync(bad); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("fdatasync(2) of an unused descriptor: %v", err)
	}
	if ok, err := r.datasync(bad); !ok || !errors.Is(err, syscall.EBADF) {
		t.Fatalf("ring fsync of an unused descriptor: taken %v, %v", ok, err)
	}

	// A closed file fails as it does without the ring.
	name := filepath.Join(t.TempDir(), "closed")
	f := writeFile(t, OS{Ring: r}, name)
	f.Close()
	plain, err := OS{}.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	plain.Close()
	got, want := Datasync(f), Datasync(plain)
	if got == nil || want == nil || got.Error() != want.Error() {
		t.Fatalf("datasync of a closed file: %v with the ring, %v without", got, want)
	}
}

// Where the kernel refuses io_uring, OpenFsyncRing says why, and an OS
// without a ring syncs with fdatasync(2).
func TestFsyncRingUnavailable(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSYS, syscall.EPERM} {
		t.Run(errno.Error(), func(t *testing.T) {
			orig := uringSetup
			uringSetup = func(uint32, *uringParams) (int, error) { return -1, errno }
			defer func() { uringSetup = orig }()
			r, err := OpenFsyncRing()
			if r != nil || !errors.Is(err, errno) {
				t.Fatalf("OpenFsyncRing = %v, %v; want %v", r, err, errno)
			}
			f := writeFile(t, OS{Ring: r}, filepath.Join(t.TempDir(), "f"))
			if err := Datasync(f); err != nil {
				t.Fatalf("datasync without a ring: %v", err)
			}
		})
	}
}

func TestFsyncRingConcurrent(t *testing.T) {
	r := openRing(t)
	dir := t.TempDir()
	const goroutines, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		f := writeFile(t, OS{Ring: r}, filepath.Join(dir, fmt.Sprint(g)))
		wg.Go(func() {
			for range each {
				if _, err := f.Write([]byte("more")); err != nil {
					errs <- err
					return
				}
				if err := Datasync(f); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := r.Fallbacks(); n != 0 {
		t.Fatalf("%d fsyncs fell back to fdatasync(2)", n)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.waiters) != 0 {
		t.Fatalf("%d waiters left", len(r.waiters))
	}
}

// Close waits for the fsyncs in flight and hands each its result; syncs
// racing it complete, through the ring or by fdatasync(2) once it is
// closed.
func TestFsyncRingCloseWithSyncsInFlight(t *testing.T) {
	r := openRing(t)
	dir := t.TempDir()
	f := writeFile(t, OS{}, filepath.Join(dir, "held"))
	fd := int(f.(osFile).Fd())
	// Submitted, not waited for: in flight until reaped.
	held, ok := r.submit(fd)
	if !ok {
		t.Fatal("the ring did not take the fsync")
	}

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	start := make(chan struct{})
	for g := range 4 {
		g := writeFile(t, OS{Ring: r}, filepath.Join(dir, fmt.Sprint(g)))
		wg.Go(func() {
			<-start
			for range 20 {
				if err := Datasync(g); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	close(start)
	if err := r.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case res := <-held:
		if res != 0 {
			t.Fatalf("held fsync: %v", syscall.Errno(-res))
		}
	default:
		t.Fatal("Close returned before the fsync in flight was answered")
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	// Closed: fdatasync(2) in place.
	after := writeFile(t, OS{Ring: r}, filepath.Join(dir, "after"))
	if err := Datasync(after); err != nil {
		t.Fatalf("datasync after close: %v", err)
	}
}
