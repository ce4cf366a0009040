package vfs

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/skein-log/skein/internal/invariant"
)

// TestMemDropCache: Mem records DropCache calls and changes nothing; on a
// closed handle it fails as fadvise(2) does; over unsynced bytes it is a
// broken invariant.
func TestMemDropCache(t *testing.T) {
	m := NewMem()
	f, err := m.OpenFile("/a", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(strings.Repeat("x", 8192))
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := DropCache(f, 0, 4096); err != nil {
		t.Fatal(err)
	}
	if err := DropCache(f, 4096, 0); err != nil { // nothing: not recorded
		t.Fatal(err)
	}
	if got, want := m.CacheDrops(), []CacheDrop{{Name: "/a", Off: 0, N: 4096}}; !slices.Equal(got, want) {
		t.Fatalf("CacheDrops = %v, want %v", got, want)
	}
	if got := m.CacheDrops(); len(got) != 0 {
		t.Fatalf("CacheDrops after CacheDrops = %v", got)
	}
	back := make([]byte, len(data))
	if _, err := f.ReadAt(back, 0); err != nil || !slices.Equal(back, data) {
		t.Fatalf("read after DropCache: %v", err)
	}

	// Written, not synced: the caller broke its promise.
	if _, err := f.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); (r != nil) != invariant.Panics {
				t.Fatalf("DropCache over unsynced bytes: recovered %v, invariants %v", r, invariant.Panics)
			}
		}()
		if err := DropCache(f, 4096, 4097); err != nil {
			t.Fatal(err)
		}
	}()
	m.CacheDrops()

	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := DropCache(f, 0, 4096); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("DropCache on a closed handle: %v, want ErrClosed", err)
	}
}

// TestOSDropCache: the OS file takes the advice (a no-op on systems
// without posix_fadvise) and keeps its bytes.
func TestOSDropCache(t *testing.T) {
	f, err := OS{}.OpenFile(t.TempDir()+"/a", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := []byte(strings.Repeat("skein", 4000))
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := DropCache(f, 0, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	back := make([]byte, len(data))
	if _, err := f.ReadAt(back, 0); err != nil || !slices.Equal(back, data) {
		t.Fatalf("read after DropCache: %v", err)
	}
}
