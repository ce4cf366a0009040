package storage

import (
	"path/filepath"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

// TestDropCacheOSReadBack: on the real filesystem, the advice takes the
// pages out of the page cache (mincore(2) of a mapping of the file), and
// the data reads back the same.
func TestDropCacheOSReadBack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	opts := quietOptions()
	opts.PageCacheWindow = mib
	l, err := Open(vfs.OS{}, dir, dropTestConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 200 { // about 13 MiB over two segments
		mustAppend(t, l, makeBatch(64, 1000, int64(i), byte(i)), 0, 1)
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	want := readAll(t, l)
	seg0 := segmentFileName(dir, 0, logSuffix)
	if r := residentPages(t, seg0); r == 0 {
		t.Skipf("%s: no page of a file just written is cached (a filesystem without a page cache?)", seg0)
	}
	if n := l.DropCache(); n < 10*mib {
		t.Fatalf("advised %d bytes out, want at least 10 MiB", n)
	}
	if r := residentPages(t, seg0); r != 0 {
		t.Fatalf("%d pages of the rolled segment, advised out whole, still cached", r)
	}
	sameBatches(t, readAll(t, l), want, "after the drop")
}

// residentPages counts the pages of the file at path in the page cache.
func residentPages(t *testing.T, path string) int {
	t.Helper()
	n, err := vfs.ResidentPages(path)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
