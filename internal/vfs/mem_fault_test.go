package vfs_test

import (
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

var errInjected = errors.New("injected EIO")

// TestMemFaultsHaveNoEffect fails one kind of operation at a time and checks
// that the failed call changed nothing, not even after a crash.
func TestMemFaultsHaveNoEffect(t *testing.T) {
	tests := []struct {
		op    vfs.Op
		act   func(m *vfs.Mem, f vfs.File) error
		check func(t *testing.T, m *vfs.Mem)
	}{
		{vfs.OpOpen, func(m *vfs.Mem, _ vfs.File) error {
			_, err := vfs.Create(m, "/d/new")
			return err
		}, func(t *testing.T, m *vfs.Mem) {
			if got := content(t, m, "/d/new"); got != absent {
				t.Errorf("file created: %q", got)
			}
		}},
		{vfs.OpOpen, func(m *vfs.Mem, _ vfs.File) error {
			_, err := vfs.Create(m, "/d/f") // O_TRUNC must not apply
			return err
		}, func(t *testing.T, m *vfs.Mem) {
			if got := content(t, m, "/d/f"); got != "abc" {
				t.Errorf("content = %q", got)
			}
		}},
		{vfs.OpWrite, func(_ *vfs.Mem, f vfs.File) error {
			_, err := f.Write([]byte("XYZW"))
			return err
		}, wantContent("abc", "abc")},
		{vfs.OpWrite, func(_ *vfs.Mem, f vfs.File) error {
			_, err := f.WriteAt([]byte("XYZW"), 1)
			return err
		}, wantContent("abc", "abc")},
		{vfs.OpRead, func(_ *vfs.Mem, f vfs.File) error {
			_, err := f.ReadAt(make([]byte, 1), 0)
			return err
		}, wantContent("abc", "abc")},
		{vfs.OpSync, func(_ *vfs.Mem, f vfs.File) error {
			if _, err := f.WriteAt([]byte("Z"), 3); err != nil {
				return err
			}
			return f.Sync()
		}, wantContent("abcZ", "abc")},
		{vfs.OpTruncate, func(_ *vfs.Mem, f vfs.File) error {
			return f.Truncate(1)
		}, wantContent("abc", "abc")},
		{vfs.OpRemove, func(m *vfs.Mem, _ vfs.File) error {
			return m.Remove("/d/f")
		}, wantContent("abc", "abc")},
		{vfs.OpRemove, func(m *vfs.Mem, _ vfs.File) error {
			return m.RemoveAll("/d")
		}, wantContent("abc", "abc")},
		{vfs.OpRename, func(m *vfs.Mem, _ vfs.File) error {
			return m.Rename("/d/f", "/d/g")
		}, func(t *testing.T, m *vfs.Mem) {
			if got := content(t, m, "/d/g"); got != absent {
				t.Errorf("target exists: %q", got)
			}
			wantContent("abc", "abc")(t, m)
		}},
		{vfs.OpMkdir, func(m *vfs.Mem, _ vfs.File) error {
			return m.MkdirAll("/d/sub/sub", 0o755)
		}, func(t *testing.T, m *vfs.Mem) {
			if ok, err := vfs.Exists(m, "/d/sub"); ok || err != nil {
				t.Errorf("Exists(/d/sub) = %v, %v", ok, err)
			}
		}},
		{vfs.OpSyncDir, func(m *vfs.Mem, _ vfs.File) error {
			f, err := vfs.Create(m, "/d/new")
			if err != nil {
				return err
			}
			if _, err := f.Write([]byte("n")); err != nil {
				return err
			}
			if err := f.Sync(); err != nil {
				return err
			}
			return m.SyncDir("/d")
		}, func(t *testing.T, m *vfs.Mem) {
			if got := content(t, m, "/d/new"); got != "n" {
				t.Errorf("before crash /d/new = %q", got)
			}
			m.Crash(vfs.CrashOptions{})
			if got := content(t, m, "/d/new"); got != absent {
				t.Errorf("after crash /d/new = %q; the failed SyncDir made it durable", got)
			}
		}},
		{vfs.OpReadDir, func(m *vfs.Mem, _ vfs.File) error {
			_, err := m.ReadDir("/d")
			return err
		}, wantContent("abc", "abc")},
		{vfs.OpStat, func(m *vfs.Mem, _ vfs.File) error {
			_, err := m.Stat("/d/f")
			return err
		}, wantContent("abc", "abc")},
	}
	for _, tc := range tests {
		t.Run(tc.op.String(), func(t *testing.T) {
			m := vfs.NewMem()
			must(t, m.MkdirAll("/d", 0o755))
			create(t, m, "/d/f", "abc", true)
			must(t, m.SyncDir("/d"))
			must(t, m.SyncDir("/"))
			f := openRW(t, m, "/d/f")
			defer f.Close()

			var seen []vfs.Op
			m.SetFault(func(op vfs.Op, path string) error {
				seen = append(seen, op)
				if op == tc.op {
					return errInjected
				}
				return nil
			})
			err := tc.act(m, f)
			m.SetFault(nil)
			if !errors.Is(err, errInjected) {
				t.Fatalf("err = %v, want the injected error (ops seen %v)", err, seen)
			}
			tc.check(t, m)
		})
	}
}

// wantContent checks /d/f now and after a crash.
func wantContent(now, afterCrash string) func(t *testing.T, m *vfs.Mem) {
	return func(t *testing.T, m *vfs.Mem) {
		t.Helper()
		if got := content(t, m, "/d/f"); got != now {
			t.Errorf("/d/f = %q, want %q", got, now)
		}
		m.Crash(vfs.CrashOptions{})
		if got := content(t, m, "/d/f"); got != afterCrash {
			t.Errorf("after crash /d/f = %q, want %q", got, afterCrash)
		}
	}
}

func TestMemFaultSeesPathsAndMayClearItself(t *testing.T) {
	m := vfs.NewMem()
	type call struct {
		op   vfs.Op
		path string
	}
	var calls []call
	m.SetFault(func(op vfs.Op, path string) error {
		calls = append(calls, call{op, path})
		if op == vfs.OpSync {
			m.SetFault(nil) // one-shot: must not deadlock
			return errInjected
		}
		return nil
	})
	f, err := vfs.Create(m, "seg.log")
	must(t, err)
	_, err = f.Write([]byte("x"))
	must(t, err)
	if err := f.Sync(); !errors.Is(err, errInjected) {
		t.Fatalf("first Sync: %v", err)
	}
	must(t, f.Sync()) // the fault removed itself
	want := []call{{vfs.OpOpen, "seg.log"}, {vfs.OpWrite, "seg.log"}, {vfs.OpSync, "seg.log"}}
	if len(calls) != len(want) {
		t.Fatalf("calls = %v, want %v", calls, want)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Errorf("call %d = %v, want %v", i, calls[i], want[i])
		}
	}
	if got := vfs.Op(99).String(); got != "Op(99)" {
		t.Errorf("unknown Op prints %q", got)
	}
}

func TestMemCapacity(t *testing.T) {
	m := vfs.NewMem()
	m.SetCapacity(10)
	f, err := vfs.Create(m, "/a")
	must(t, err)
	if _, err := f.Write([]byte("12345678")); err != nil {
		t.Fatal(err)
	}
	usage := func(want int64) {
		t.Helper()
		if got := m.Usage(); got != want {
			t.Errorf("Usage = %d, want %d", got, want)
		}
	}
	usage(8)

	n, err := f.Write([]byte("abc"))
	if !vfs.IsNoSpace(err) || n != 0 {
		t.Fatalf("Write past capacity = %d, %v; want 0, ENOSPC", n, err)
	}
	if size, _ := f.Size(); size != 8 {
		t.Fatalf("size after failed write = %d", size)
	}
	if _, err := f.WriteAt([]byte("abcdefgh"), 0); err != nil {
		t.Fatalf("overwrite in place: %v", err)
	}
	if _, err := f.Write([]byte("9A")); err != nil {
		t.Fatalf("write up to the limit: %v", err)
	}
	usage(10)
	if err := f.Truncate(11); !vfs.IsNoSpace(err) {
		t.Fatalf("Truncate grow past capacity: %v", err)
	}
	must(t, f.Truncate(5))
	usage(5)

	create(t, m, "/b", "12345", false)
	usage(10)
	// A removed file keeps its space while a handle is open, as on Linux.
	must(t, m.Remove("/a"))
	usage(10)
	must(t, f.Close())
	usage(5)
	g := openRW(t, m, "/b")
	must(t, m.Rename("/b", "/c")) // renames do not change usage
	usage(5)
	create(t, m, "/d", "xxxxx", false)
	must(t, m.Rename("/d", "/c")) // replacing frees the old /c once closed
	usage(10)
	must(t, g.Close())
	usage(5)

	m.SetCapacity(-1)
	create(t, m, "/big", string(make([]byte, 1000)), false)
	usage(1005)

	// After a crash only durable files count.
	create(t, m, "/kept", "123", true)
	must(t, m.SyncDir("/"))
	m.Crash(vfs.CrashOptions{})
	usage(3) // /c and /big survive empty (never synced); /kept has 3 bytes
	if got := content(t, m, "/big"); got != "" {
		t.Errorf("/big = %q", got)
	}
}

// TestMemConcurrentReadWrite runs readers against an appending writer; run
// with -race. Readers must only ever see bytes the writer wrote.
func TestMemConcurrentReadWrite(t *testing.T) {
	m := vfs.NewMem()
	w, err := vfs.Create(m, "/log")
	must(t, err)
	pattern := func(i int64) byte { return byte(i % 251) }

	const chunks, chunkSize = 200, 64
	var wg sync.WaitGroup
	writerDone := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(writerDone)
		buf := make([]byte, chunkSize)
		for c := range int64(chunks) {
			for i := range buf {
				buf[i] = pattern(c*chunkSize + int64(i))
			}
			if _, err := w.Write(buf); err != nil {
				t.Errorf("write: %v", err)
				return
			}
			if c%10 == 0 {
				if err := w.Sync(); err != nil {
					t.Errorf("sync: %v", err)
				}
			}
		}
	}()
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := vfs.Open(m, "/log")
			if err != nil {
				t.Errorf("open: %v", err)
				return
			}
			defer r.Close()
			buf := make([]byte, 100)
			for off := int64(0); off < chunks*chunkSize; {
				n, err := r.ReadAt(buf, off)
				if err != nil && !errors.Is(err, io.EOF) {
					t.Errorf("read: %v", err)
					return
				}
				for i := range n {
					if buf[i] != pattern(off+int64(i)) {
						t.Errorf("byte %d = %d, want %d", off+int64(i), buf[i], pattern(off+int64(i)))
						return
					}
				}
				if n == 0 {
					select {
					case <-writerDone:
						if size, _ := r.Size(); off >= size {
							t.Errorf("writer finished at %d bytes", size)
							return
						}
					default: // the writer is still going; try again
					}
				}
				off += int64(n)
			}
		}()
	}
	wg.Wait()
	must(t, w.Close())
}
