package vfs

// DropCache tells the kernel that f's bytes [off, off+n) will not be read
// again soon and may leave the page cache: posix_fadvise(2) with
// POSIX_FADV_DONTNEED where f offers it (DropCache() on the file), nothing
// otherwise. It is advice: the contents and their durability do not
// change, and a later read gets the same bytes (from the disk instead of
// memory).
//
// Callers pass only bytes a Sync has made durable: DONTNEED on dirty pages
// does not drop them but starts their writeback, an I/O the caller did not
// ask for (Mem holds its callers to this under -tags invariants).
func DropCache(f File, off, n int64) error {
	if n <= 0 {
		return nil
	}
	if d, ok := f.(interface{ DropCache(off, n int64) error }); ok {
		return d.DropCache(off, n)
	}
	return nil
}
