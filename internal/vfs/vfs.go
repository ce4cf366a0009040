// Package vfs is the filesystem seam. Every file the broker touches goes
// through FS, so tests can swap the operating system for an in-memory
// filesystem that loses unsynced data on a simulated crash and fails chosen
// calls (ENOSPC, EIO).
//
// Durability model (the same for both implementations):
//   - File contents written with Write/WriteAt survive a crash only after
//     File.Sync returns nil.
//   - Creating, renaming or removing a directory entry survives a crash only
//     after SyncDir on the parent directory returns nil.
package vfs

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// File is an open file. Implementations need not be safe for concurrent
// writers; concurrent ReadAt calls alongside one writer must be safe.
type File interface {
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Closer
	// Sync makes everything written so far durable.
	Sync() error
	// Truncate changes the size of the file. The change is durable after Sync.
	Truncate(size int64) error
	// Size reports the current (not necessarily durable) size.
	Size() (int64, error)
	// Name is the path the file was opened with.
	Name() string
}

// FS is the set of filesystem operations the broker needs. Paths use the
// host separator; implementations accept paths produced by path/filepath.
type FS interface {
	// OpenFile opens a file with os.O_* flags (O_RDONLY, O_RDWR, O_CREATE,
	// O_EXCL, O_TRUNC, O_APPEND are honoured).
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove deletes a file or an empty directory.
	Remove(name string) error
	// RemoveAll deletes a path and everything below it.
	RemoveAll(name string) error
	// Rename atomically replaces newName with oldName.
	Rename(oldName, newName string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string, perm os.FileMode) error
	// ReadDir lists the names in a directory, sorted.
	ReadDir(dir string) ([]DirEntry, error)
	// Stat describes a path.
	Stat(name string) (DirEntry, error)
	// SyncDir makes the directory's entries (creations, renames, removals)
	// durable.
	SyncDir(dir string) error
	// SyncFS makes everything written to the filesystem holding dir
	// durable, file contents and directory entries alike, as syncfs(2)
	// does: one call instead of one fsync per file or directory, for a
	// broker closing thousands of logs.
	SyncFS(dir string) error
	// Space reports the size and free space of the filesystem holding
	// dir, as statfs(2) does: what the broker compares with its
	// free-space floor (log.dir.min.free.bytes / .percent).
	Space(dir string) (Space, error)
}

// Space is a filesystem's size and the bytes an unprivileged writer may
// still use (statfs's f_bavail, not f_bfree: root's reserve does not help
// the broker).
type Space struct {
	Total int64
	Free  int64
}

// DirEntry describes one path.
type DirEntry struct {
	Name  string // base name
	IsDir bool
	Size  int64
}

// ErrNoSpace is returned (wrapped) when the device is full. It matches
// syscall.ENOSPC with errors.Is.
var ErrNoSpace = syscall.ENOSPC

// IsNoSpace reports whether err means the disk is full.
func IsNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }

// Open opens a file read-only.
func Open(fs FS, name string) (File, error) { return fs.OpenFile(name, os.O_RDONLY, 0) }

// Create creates or truncates a file for reading and writing.
func Create(fs FS, name string) (File, error) {
	return fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// Exists reports whether a path exists.
func Exists(fs FS, name string) (bool, error) {
	_, err := fs.Stat(name)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// WriteFileAtomic replaces name with data durably: it writes a temporary
// file, syncs it, renames it over name and syncs the directory. After a crash
// the reader sees either the old or the new contents, never a mix.
func WriteFileAtomic(fs FS, dir, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fs.Rename(tmp, name); err != nil {
		return err
	}
	return fs.SyncDir(dir)
}

// ReadFile reads a whole file.
func ReadFile(fs FS, name string) ([]byte, error) {
	f, err := Open(fs, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !(errors.Is(err, io.EOF) && int64(n) == size) {
		return nil, err
	}
	return buf[:n], nil
}
