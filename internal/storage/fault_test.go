package storage

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

func TestNoSpaceMidAppend(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/p", smallConfig())
	defer l.Close()
	want := fillLog(t, l, 10, 0)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	fs.SetCapacity(fs.Usage() + 500) // room for about two more batches
	var appended int
	var lastErr error
	for range 20 {
		b := makeBatch(2, 100, 0, 1)
		if _, err := l.Append(b, 0, 0); err != nil {
			lastErr = err
			break
		}
		want = append(want, b)
		appended++
	}
	if !vfs.IsNoSpace(lastErr) {
		t.Fatalf("want ENOSPC, got %v after %d appends", lastErr, appended)
	}
	if l.Failed() != nil {
		t.Fatalf("a refused write should not fail the log: %v", l.Failed())
	}
	if got := readAll(t, l); len(got) != len(want) {
		t.Fatalf("%d batches readable, want %d", len(got), len(want))
	}
	// Space comes back: appends continue where they stopped.
	fs.SetCapacity(-1)
	b := makeBatch(2, 100, 0, 2)
	if _, err := l.Append(b, 0, 0); err != nil {
		t.Fatal(err)
	}
	want = append(want, b)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, l)
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
}

func TestWriteErrorIsUndone(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/p", smallConfig())
	defer l.Close()
	fillLog(t, l, 3, 0)
	end := l.LogEndOffset()
	fs.SetFault(func(op vfs.Op, path string) error {
		if op == vfs.OpWrite && strings.HasSuffix(path, logSuffix) {
			return syscall.EIO
		}
		return nil
	})
	if _, err := l.Append(makeBatch(1, 10, 0, 0), 0, 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("got %v", err)
	}
	fs.SetFault(nil)
	if l.LogEndOffset() != end || l.Failed() != nil {
		t.Fatalf("end %d (want %d), failed %v", l.LogEndOffset(), end, l.Failed())
	}
	mustAppend(t, l, makeBatch(1, 10, 0, 0), 0, 0)
	readAll(t, l)

	// If the undo fails too, the log must stop taking writes.
	fs.SetFault(func(op vfs.Op, path string) error {
		if (op == vfs.OpWrite || op == vfs.OpTruncate) && strings.HasSuffix(path, logSuffix) {
			return syscall.EIO
		}
		return nil
	})
	if _, err := l.Append(makeBatch(1, 10, 0, 0), 0, 0); err == nil {
		t.Fatal("append succeeded")
	}
	fs.SetFault(nil)
	if _, err := l.Append(makeBatch(1, 10, 0, 0), 0, 0); !errors.Is(err, ErrLogFailed) {
		t.Fatalf("failed log took an append: %v", err)
	}
	readAll(t, l)
}

func TestSyncErrorFailsLog(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/p", smallConfig())
	want := fillLog(t, l, 20, 0)
	durable, err := l.Sync()
	if err != nil {
		t.Fatal(err)
	}
	fillLog(t, l, 5, 0)
	fs.SetFault(func(op vfs.Op, path string) error {
		if op == vfs.OpSync {
			return syscall.EIO
		}
		return nil
	})
	if _, err := l.Sync(); !errors.Is(err, syscall.EIO) || !errors.Is(err, ErrLogFailed) {
		t.Fatalf("sync: %v", err)
	}
	fs.SetFault(nil)
	if l.DurableEndOffset() != durable {
		t.Fatalf("durable end moved to %d after a failed sync", l.DurableEndOffset())
	}
	if _, err := l.Append(makeBatch(1, 1, 0, 0), 0, 0); !errors.Is(err, ErrLogFailed) {
		t.Fatalf("append after failed sync: %v", err)
	}
	if _, err := l.Sync(); !errors.Is(err, ErrLogFailed) {
		t.Fatalf("sync retried after failure: %v", err)
	}
	got := readAll(t, l) // synced data stays readable
	if len(got) != 25 {
		t.Fatalf("%d batches readable", len(got))
	}
	if err := l.Close(); !errors.Is(err, ErrLogFailed) {
		t.Fatalf("close of failed log: %v", err)
	}
	fs.Crash(vfs.CrashOptions{})
	l = openLog(t, fs, "/p", smallConfig())
	defer l.Close()
	got = readAll(t, l)
	if len(got) < len(want) {
		t.Fatalf("lost synced batches: %d < %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
}

func TestDirectoryCreatedDurably(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/a/b/p", smallConfig())
	want := fillLog(t, l, 3, 0)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	fs.Crash(vfs.CrashOptions{})
	l = openLog(t, fs, "/a/b/p", smallConfig())
	defer l.Close()
	if got := readAll(t, l); len(got) != len(want) {
		t.Fatalf("%d batches after crash, want %d", len(got), len(want))
	}
}
