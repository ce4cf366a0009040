package vfs

import (
	"fmt"
	"os"
)

// Op names a Mem operation that a fault can fail.
type Op int

// The operations a FaultFunc sees. File handle operations report the path the
// file was opened with; Rename reports the old name; RemoveAll reports
// OpRemove.
const (
	OpOpen Op = iota + 1
	OpRead
	OpWrite // Write and WriteAt
	OpSync
	OpTruncate
	OpRemove // Remove and RemoveAll
	OpRename
	OpMkdir
	OpReadDir
	OpStat
	OpSyncDir
	OpSyncFS
)

var opNames = map[Op]string{
	OpOpen:     "open",
	OpRead:     "read",
	OpWrite:    "write",
	OpSync:     "sync",
	OpTruncate: "truncate",
	OpRemove:   "remove",
	OpRename:   "rename",
	OpMkdir:    "mkdir",
	OpReadDir:  "readdir",
	OpStat:     "stat",
	OpSyncDir:  "syncdir",
	OpSyncFS:   "syncfs",
}

func (op Op) String() string {
	if name, ok := opNames[op]; ok {
		return name
	}
	return fmt.Sprintf("Op(%d)", int(op))
}

// FaultFunc decides whether an operation fails. A non-nil result makes the
// call return that error (wrapped in *os.PathError, so errors.Is finds it)
// before the call has any effect. It is called without Mem's lock held, so it
// may call Mem's methods, including SetFault.
type FaultFunc func(op Op, path string) error

// SetFault installs fn as the fault injector; nil removes it.
func (m *Mem) SetFault(fn FaultFunc) {
	if fn == nil {
		m.fault.Store(nil)
		return
	}
	m.fault.Store(&fn)
}

// inject asks the fault function about one call. Callers must not hold m.mu.
func (m *Mem) inject(op Op, path string) error {
	fn := m.fault.Load()
	if fn == nil {
		return nil
	}
	if err := (*fn)(op, path); err != nil {
		return &os.PathError{Op: op.String(), Path: path, Err: err}
	}
	return nil
}
