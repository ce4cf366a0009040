package vfs

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// errWriteAtInAppendMode matches os.File, which refuses WriteAt on O_APPEND
// handles because the kernel would ignore the offset.
var errWriteAtInAppendMode = errors.New("invalid use of WriteAt on file opened with O_APPEND")

// memFile is an open handle on a Mem file. All state lives behind the Mem's
// mutex, so handles are safe for concurrent use.
type memFile struct {
	fs         *Mem
	node       *memNode
	name       string
	generation uint64 // Mem.generation at open; a crash makes the handle dead
	readable   bool
	writable   bool
	appendOnly bool
	offset     int64 // where the next Write goes (without O_APPEND)
	closed     bool
}

var _ File = (*memFile)(nil)

// usable reports why the handle cannot be used, if it cannot. Callers hold
// f.fs.mu.
func (f *memFile) usable(op string) error {
	switch {
	case f.closed:
		return &os.PathError{Op: op, Path: f.name, Err: os.ErrClosed}
	case f.generation != f.fs.generation:
		return &os.PathError{Op: op, Path: f.name, Err: ErrCrashed}
	}
	return nil
}

// Name implements File.
func (f *memFile) Name() string { return f.name }

// ReadAt implements File with os.File's contract: a short read returns io.EOF.
func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.inject(OpRead, f.name); err != nil {
		return 0, err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.usable("read"); err != nil {
		return 0, err
	}
	if !f.readable {
		return 0, &os.PathError{Op: "read", Path: f.name, Err: syscall.EBADF}
	}
	if off < 0 {
		return 0, &os.PathError{Op: "readat", Path: f.name, Err: syscall.EINVAL}
	}
	data := f.node.data
	if off >= int64(len(data)) {
		return 0, io.EOF
	}
	n := copy(p, data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Write implements File. With O_APPEND it always writes at the end.
func (f *memFile) Write(p []byte) (int, error) {
	if err := f.fs.inject(OpWrite, f.name); err != nil {
		return 0, err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.usable("write"); err != nil {
		return 0, err
	}
	off := f.offset
	if f.appendOnly {
		off = int64(len(f.node.data))
	}
	if err := f.writeLocked("write", p, off); err != nil {
		return 0, err
	}
	f.offset = off + int64(len(p))
	return len(p), nil
}

// WriteAt implements File. Writing past the end fills the gap with zeros.
func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.inject(OpWrite, f.name); err != nil {
		return 0, err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.usable("write"); err != nil {
		return 0, err
	}
	if f.appendOnly {
		return 0, &os.PathError{Op: "writeat", Path: f.name, Err: errWriteAtInAppendMode}
	}
	if off < 0 {
		return 0, &os.PathError{Op: "writeat", Path: f.name, Err: syscall.EINVAL}
	}
	if err := f.writeLocked("writeat", p, off); err != nil {
		return 0, err
	}
	return len(p), nil
}

// writeLocked writes all of p at off or, on error, nothing. Callers hold
// f.fs.mu.
func (f *memFile) writeLocked(op string, p []byte, off int64) error {
	if !f.writable {
		return &os.PathError{Op: op, Path: f.name, Err: syscall.EBADF}
	}
	if len(p) == 0 {
		return nil // pwrite(2) of nothing does not extend the file
	}
	if off > maxMemFileSize-int64(len(p)) { // written this way so it cannot overflow
		return &os.PathError{Op: op, Path: f.name, Err: syscall.EFBIG}
	}
	n := f.node
	end := off + int64(len(p))
	if err := f.fs.reserve(end - int64(len(n.data))); err != nil {
		return &os.PathError{Op: op, Path: f.name, Err: err}
	}
	if end > int64(len(n.data)) {
		n.truncate(end)
	}
	n.dirtyFrom = min(n.dirtyFrom, int(off))
	copy(n.data[off:], p)
	f.fs.recharge(n)
	return nil
}

// Truncate implements File.
func (f *memFile) Truncate(size int64) error {
	if err := f.fs.inject(OpTruncate, f.name); err != nil {
		return err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.usable("truncate"); err != nil {
		return err
	}
	fail := func(err error) error { return &os.PathError{Op: "truncate", Path: f.name, Err: err} }
	switch {
	case !f.writable || size < 0: // ftruncate(2) answers EINVAL to both
		return fail(syscall.EINVAL)
	case size > maxMemFileSize:
		return fail(syscall.EFBIG)
	}
	if err := f.fs.reserve(size - int64(len(f.node.data))); err != nil {
		return fail(err)
	}
	f.node.truncate(size)
	f.fs.recharge(f.node)
	return nil
}

// Sync implements File: the current contents, truncations included, become
// the durable contents. It works on read-only handles, as fsync(2) does.
func (f *memFile) Sync() error {
	if err := f.fs.inject(OpSync, f.name); err != nil {
		return err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.usable("sync"); err != nil {
		return err
	}
	n := f.node
	n.durable = append(n.durable[:n.dirtyFrom], n.data[n.dirtyFrom:]...)
	n.dirtyFrom = len(n.data)
	return nil
}

// Size implements File.
func (f *memFile) Size() (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.usable("stat"); err != nil {
		return 0, err
	}
	return int64(len(f.node.data)), nil
}

// Close implements File. Closing a handle that a crash invalidated reports
// ErrCrashed (and still marks it closed).
func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.usable("close"); err != nil {
		f.closed = true
		return err
	}
	f.closed = true
	f.node.opens--
	f.fs.recharge(f.node)
	return nil
}

// truncate resizes the current contents, zero-filling any growth. The caller
// has checked size against the limits and recharges afterwards.
func (n *memNode) truncate(size int64) {
	oldLen := len(n.data)
	n.dirtyFrom = min(n.dirtyFrom, oldLen, int(size))
	switch {
	case size == 0:
		n.data = nil // give the memory back
	case int(size) <= oldLen:
		n.data = n.data[:size]
	default:
		// Appending zeros (not reslicing) matters: the backing array may
		// still hold bytes from before an earlier shrink.
		n.data = append(n.data, make([]byte, int(size)-oldLen)...)
	}
}
