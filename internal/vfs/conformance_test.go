package vfs_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

// TestConformance runs the same non-crash behaviour against the real
// filesystem and Mem, so code tested on Mem behaves the same in production.
func TestConformance(t *testing.T) {
	impls := []struct {
		name  string
		setup func(t *testing.T) (vfs.FS, string)
	}{
		{"OS", func(t *testing.T) (vfs.FS, string) { return vfs.OS{}, t.TempDir() }},
		{"Mem", func(t *testing.T) (vfs.FS, string) {
			m := vfs.NewMem()
			must(t, m.MkdirAll("/data", 0o755))
			return m, "/data"
		}},
	}
	for _, impl := range impls {
		for _, tc := range conformanceCases {
			t.Run(impl.name+"/"+tc.name, func(t *testing.T) {
				fsys, root := impl.setup(t)
				tc.run(t, fsys, root)
			})
		}
	}
}

var conformanceCases = []struct {
	name string
	run  func(t *testing.T, fsys vfs.FS, root string)
}{
	{"write read size name", func(t *testing.T, fsys vfs.FS, root string) {
		name := filepath.Join(root, "a")
		f, err := vfs.Create(fsys, name)
		must(t, err)
		defer f.Close()
		if f.Name() != name {
			t.Errorf("Name() = %q, want %q", f.Name(), name)
		}
		for _, s := range []string{"hello ", "world"} {
			if n, err := f.Write([]byte(s)); err != nil || n != len(s) {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if size, err := f.Size(); err != nil || size != 11 {
			t.Fatalf("Size = %d, %v", size, err)
		}
		buf := make([]byte, 5)
		if n, err := f.ReadAt(buf, 6); err != nil || string(buf[:n]) != "world" {
			t.Fatalf("ReadAt = %q, %v", buf[:n], err)
		}
		if n, err := f.ReadAt(buf, 8); !errors.Is(err, io.EOF) || string(buf[:n]) != "rld" {
			t.Fatalf("short ReadAt = %q, %v; want rld, EOF", buf[:n], err)
		}
		if n, err := f.ReadAt(buf, 11); n != 0 || !errors.Is(err, io.EOF) {
			t.Fatalf("ReadAt at end = %d, %v", n, err)
		}
		if _, err := f.ReadAt(buf, -1); err == nil {
			t.Fatal("ReadAt at negative offset succeeded")
		}
	}},
	{"writeat fills holes with zeros", func(t *testing.T, fsys vfs.FS, root string) {
		name := filepath.Join(root, "a")
		f, err := vfs.Create(fsys, name)
		must(t, err)
		_, err = f.WriteAt([]byte("xy"), 3)
		must(t, err)
		_, err = f.WriteAt([]byte("Z"), 0)
		must(t, err)
		_, err = f.WriteAt(nil, 100) // writing nothing does not extend
		must(t, err)
		must(t, f.Close())
		if got := content(t, fsys, name); got != "Z\x00\x00xy" {
			t.Fatalf("content = %q", got)
		}
	}},
	{"truncate shrinks and grows with zeros", func(t *testing.T, fsys vfs.FS, root string) {
		name := filepath.Join(root, "a")
		create(t, fsys, name, "abcdef", false)
		f := openRW(t, fsys, name)
		must(t, f.Truncate(2))
		must(t, f.Truncate(4))
		if err := f.Truncate(-1); err == nil {
			t.Error("Truncate(-1) succeeded")
		}
		must(t, f.Close())
		if got := content(t, fsys, name); got != "ab\x00\x00" {
			t.Fatalf("content = %q", got)
		}
	}},
	{"append", func(t *testing.T, fsys vfs.FS, root string) {
		name := filepath.Join(root, "a")
		create(t, fsys, name, "abc", false)
		f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		_, err = f.Write([]byte("de"))
		must(t, err)
		if _, err := f.WriteAt([]byte("X"), 0); err == nil {
			t.Error("WriteAt on O_APPEND handle succeeded")
		}
		// Another handle grows the file; O_APPEND still writes at the end.
		g := openRW(t, fsys, name)
		_, err = g.WriteAt([]byte("123456"), 0)
		must(t, err)
		must(t, g.Close())
		_, err = f.Write([]byte("!"))
		must(t, err)
		must(t, f.Close())
		if got := content(t, fsys, name); got != "123456!" {
			t.Fatalf("content = %q", got)
		}
	}},
	{"sequential writes follow the handle offset", func(t *testing.T, fsys vfs.FS, root string) {
		name := filepath.Join(root, "a")
		create(t, fsys, name, "abcdef", false)
		f := openRW(t, fsys, name)
		_, err := f.Write([]byte("XY"))
		must(t, err)
		_, err = f.Write([]byte("Z"))
		must(t, err)
		must(t, f.Close())
		if got := content(t, fsys, name); got != "XYZdef" {
			t.Fatalf("content = %q", got)
		}
	}},
	{"open flags", func(t *testing.T, fsys vfs.FS, root string) {
		name := filepath.Join(root, "a")
		if _, err := vfs.Open(fsys, name); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("open missing: %v, want ErrNotExist", err)
		}
		if _, err := vfs.Create(fsys, filepath.Join(root, "nodir", "a")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("create in missing dir: %v, want ErrNotExist", err)
		}
		create(t, fsys, name, "abc", false)
		if _, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, os.ErrExist) {
			t.Errorf("O_EXCL on existing: %v, want ErrExist", err)
		}
		f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		must(t, err)
		must(t, f.Close())
		if got := content(t, fsys, name); got != "abc" {
			t.Errorf("O_CREATE without O_TRUNC changed content to %q", got)
		}
		f, err = fsys.OpenFile(name, os.O_RDWR|os.O_TRUNC, 0)
		must(t, err)
		must(t, f.Close())
		if got := content(t, fsys, name); got != "" {
			t.Errorf("O_TRUNC left %q", got)
		}
	}},
	{"access modes", func(t *testing.T, fsys vfs.FS, root string) {
		name := filepath.Join(root, "a")
		create(t, fsys, name, "abc", false)
		r, err := vfs.Open(fsys, name)
		must(t, err)
		defer r.Close()
		if _, err := r.Write([]byte("x")); err == nil {
			t.Error("Write on read-only handle succeeded")
		}
		if _, err := r.WriteAt([]byte("x"), 0); err == nil {
			t.Error("WriteAt on read-only handle succeeded")
		}
		if err := r.Truncate(0); err == nil {
			t.Error("Truncate on read-only handle succeeded")
		}
		w, err := fsys.OpenFile(name, os.O_WRONLY, 0)
		must(t, err)
		defer w.Close()
		if _, err := w.ReadAt(make([]byte, 1), 0); err == nil {
			t.Error("ReadAt on write-only handle succeeded")
		}
		if got := content(t, fsys, name); got != "abc" {
			t.Errorf("content = %q", got)
		}
	}},
	{"use after close", func(t *testing.T, fsys vfs.FS, root string) {
		f, err := vfs.Create(fsys, filepath.Join(root, "a"))
		must(t, err)
		must(t, f.Close())
		checks := map[string]error{
			"write":    func() error { _, err := f.Write([]byte("x")); return err }(),
			"readat":   func() error { _, err := f.ReadAt(make([]byte, 1), 0); return err }(),
			"sync":     f.Sync(),
			"truncate": f.Truncate(0),
			"close":    f.Close(),
		}
		for op, err := range checks {
			if !errors.Is(err, os.ErrClosed) {
				t.Errorf("%s after close: %v, want ErrClosed", op, err)
			}
		}
	}},
	{"removed file stays usable through its handle", func(t *testing.T, fsys vfs.FS, root string) {
		name := filepath.Join(root, "a")
		create(t, fsys, name, "abc", false)
		f := openRW(t, fsys, name)
		must(t, fsys.Remove(name))
		_, err := f.Write([]byte("X"))
		must(t, err)
		buf := make([]byte, 3)
		if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "Xbc" {
			t.Fatalf("ReadAt = %q, %v", buf, err)
		}
		must(t, f.Close())
		if got := content(t, fsys, name); got != absent {
			t.Fatalf("removed file reads %q", got)
		}
	}},
	{"rename", func(t *testing.T, fsys vfs.FS, root string) {
		a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
		create(t, fsys, a, "new", false)
		create(t, fsys, b, "old", false)
		must(t, fsys.Rename(a, b))
		if got := content(t, fsys, b); got != "new" {
			t.Errorf("target = %q", got)
		}
		if got := content(t, fsys, a); got != absent {
			t.Errorf("source still there: %q", got)
		}
		if err := fsys.Rename(a, b); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("rename missing: %v, want ErrNotExist", err)
		}
		must(t, fsys.Rename(b, b))
		dir := filepath.Join(root, "d")
		must(t, fsys.MkdirAll(filepath.Join(dir, "sub"), 0o755))
		if err := fsys.Rename(b, dir); err == nil {
			t.Error("renaming a file over a directory succeeded")
		}
		if err := fsys.Rename(dir, filepath.Join(dir, "sub", "x")); err == nil {
			t.Error("moving a directory below itself succeeded")
		}
		moved := filepath.Join(root, "e")
		must(t, fsys.Rename(dir, moved))
		if got := names(t, fsys, moved); !slices.Equal(got, []string{"sub"}) {
			t.Errorf("moved dir holds %v", got)
		}
	}},
	{"remove", func(t *testing.T, fsys vfs.FS, root string) {
		dir := filepath.Join(root, "d")
		must(t, fsys.MkdirAll(dir, 0o755))
		create(t, fsys, filepath.Join(dir, "f"), "x", false)
		if err := fsys.Remove(dir); err == nil {
			t.Error("removing a non-empty directory succeeded")
		}
		must(t, fsys.Remove(filepath.Join(dir, "f")))
		if err := fsys.Remove(filepath.Join(dir, "f")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("remove missing: %v, want ErrNotExist", err)
		}
		must(t, fsys.Remove(dir))
		if ok, err := vfs.Exists(fsys, dir); err != nil || ok {
			t.Errorf("Exists after remove = %v, %v", ok, err)
		}
	}},
	{"removeall", func(t *testing.T, fsys vfs.FS, root string) {
		dir := filepath.Join(root, "d")
		must(t, fsys.MkdirAll(filepath.Join(dir, "x", "y"), 0o755))
		create(t, fsys, filepath.Join(dir, "x", "y", "f"), "x", false)
		create(t, fsys, filepath.Join(dir, "g"), "x", false)
		must(t, fsys.RemoveAll(dir))
		if got := names(t, fsys, root); len(got) != 0 {
			t.Errorf("root holds %v", got)
		}
		must(t, fsys.RemoveAll(dir)) // missing is fine
	}},
	{"mkdirall readdir stat", func(t *testing.T, fsys vfs.FS, root string) {
		dir := filepath.Join(root, "a", "b")
		must(t, fsys.MkdirAll(dir, 0o755))
		must(t, fsys.MkdirAll(dir, 0o755)) // idempotent
		create(t, fsys, filepath.Join(dir, "z"), "12345", false)
		create(t, fsys, filepath.Join(dir, "m"), "", false)
		must(t, fsys.MkdirAll(filepath.Join(dir, "c"), 0o755))
		if err := fsys.MkdirAll(filepath.Join(dir, "z", "q"), 0o755); err == nil {
			t.Error("MkdirAll through a file succeeded")
		}
		entries, err := fsys.ReadDir(dir)
		must(t, err)
		var got []vfs.DirEntry
		for _, e := range entries {
			if e.IsDir {
				e.Size = 0 // directory sizes are filesystem-specific
			}
			got = append(got, e)
		}
		want := []vfs.DirEntry{{Name: "c", IsDir: true}, {Name: "m"}, {Name: "z", Size: 5}}
		if !slices.Equal(got, want) {
			t.Errorf("ReadDir = %+v, want %+v", got, want)
		}
		st, err := fsys.Stat(filepath.Join(dir, "z"))
		if err != nil || st != (vfs.DirEntry{Name: "z", Size: 5}) {
			t.Errorf("Stat file = %+v, %v", st, err)
		}
		st, err = fsys.Stat(dir)
		if err != nil || !st.IsDir || st.Name != "b" {
			t.Errorf("Stat dir = %+v, %v", st, err)
		}
		if _, err := fsys.Stat(filepath.Join(dir, "nope")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Stat missing: %v, want ErrNotExist", err)
		}
		if _, err := fsys.ReadDir(filepath.Join(dir, "nope")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("ReadDir missing: %v, want ErrNotExist", err)
		}
		if _, err := fsys.ReadDir(filepath.Join(dir, "z")); err == nil {
			t.Error("ReadDir on a file succeeded")
		}
	}},
	{"syncdir", func(t *testing.T, fsys vfs.FS, root string) {
		must(t, fsys.SyncDir(root))
		if err := fsys.SyncDir(filepath.Join(root, "nope")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("SyncDir missing: %v, want ErrNotExist", err)
		}
	}},
	{"write file atomic", func(t *testing.T, fsys vfs.FS, root string) {
		name := filepath.Join(root, "cp")
		must(t, vfs.WriteFileAtomic(fsys, root, name, []byte("one")))
		must(t, vfs.WriteFileAtomic(fsys, root, name, []byte("two")))
		if got := content(t, fsys, name); got != "two" {
			t.Errorf("content = %q", got)
		}
		if got := names(t, fsys, root); !slices.Equal(got, []string{"cp"}) {
			t.Errorf("dir holds %v", got)
		}
	}},
}

// Datasync makes written contents durable on both implementations (the
// OS's fdatasync, Mem's Sync) and reports a closed handle's failure.
func TestDatasync(t *testing.T) {
	mem := vfs.NewMem()
	for name, fs := range map[string]vfs.FS{"os": vfs.OS{}, "mem": mem} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if name == "mem" {
				dir = "/d"
				if err := vfs.MkdirAllDurably(mem, dir); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(dir, "f")
			f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if err := fs.SyncDir(dir); err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte("hello"), 0); err != nil {
				t.Fatal(err)
			}
			if err := vfs.Datasync(f); err != nil {
				t.Fatalf("datasync: %v", err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if err := vfs.Datasync(f); err == nil {
				t.Fatal("datasync of a closed file succeeded")
			}
			if name == "mem" {
				mem.Crash(vfs.CrashOptions{})
			}
			data, err := vfs.ReadFile(fs, path)
			if err != nil || string(data) != "hello" {
				t.Fatalf("read back %q, %v", data, err)
			}
		})
	}
}
