package vfs

import (
	"os"
	"syscall"

	"github.com/skein-log/skein/internal/invariant"
)

// CacheDrop is one DropCache call on a Mem file: the path the handle was
// opened with and the range advised out.
type CacheDrop struct {
	Name   string
	Off, N int64
}

// DropCache implements the optional DropCache of File (see the package
// function DropCache). Mem has no page cache, so it changes nothing; it
// records the call (CacheDrops) so tests can see what a caller advised
// out. Advising out bytes written since the last Sync is a caller's bug
// (the kernel would start their writeback): it is an invariant violation.
func (f *memFile) DropCache(off, n int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.usable("fadvise"); err != nil {
		return err
	}
	if off < 0 || n < 0 {
		return &os.PathError{Op: "fadvise", Path: f.name, Err: syscall.EINVAL}
	}
	if end := off + n; end > int64(f.node.dirtyFrom) && off < int64(len(f.node.data)) {
		invariant.Broken("vfs: %s: page cache drop of [%d, %d) reaches bytes not synced (from %d)", f.name, off, end, f.node.dirtyFrom)
	}
	if len(f.fs.drops) == maxCacheDrops {
		// A long simulation nobody asks: keep the newest.
		f.fs.drops = append(f.fs.drops[:0], f.fs.drops[1:]...)
	}
	f.fs.drops = append(f.fs.drops, CacheDrop{Name: f.name, Off: off, N: n})
	return nil
}

// maxCacheDrops bounds the calls Mem remembers between CacheDrops.
const maxCacheDrops = 4096

// CacheDrops returns the DropCache calls made on Mem's files since the last
// call (at most the newest maxCacheDrops), oldest first, and forgets them.
func (m *Mem) CacheDrops() []CacheDrop {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.drops
	m.drops = nil
	return d
}
