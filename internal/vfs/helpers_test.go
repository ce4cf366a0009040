package vfs_test

import (
	"errors"
	"os"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

// create writes a new file (O_TRUNC) and closes it, optionally syncing it.
func create(t *testing.T, fsys vfs.FS, name, content string, sync bool) {
	t.Helper()
	f, err := vfs.Create(fsys, name)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	if _, err := f.Write([]byte(content)); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close %s: %v", name, err)
	}
}

// openRW opens an existing file for reading and writing.
func openRW(t *testing.T, fsys vfs.FS, name string) vfs.File {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	return f
}

// content returns the file's bytes, or "<absent>" if it does not exist.
func content(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	data, err := vfs.ReadFile(fsys, name)
	if errors.Is(err, os.ErrNotExist) {
		return absent
	}
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(data)
}

const absent = "<absent>"

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func names(t *testing.T, fsys vfs.FS, dir string) []string {
	t.Helper()
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatalf("readdir %s: %v", dir, err)
	}
	out := []string{}
	for _, e := range entries {
		out = append(out, e.Name)
	}
	return out
}
