package vfs

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Mem is an in-memory FS that can simulate power loss. It exists so that
// storage recovery and whole-cluster simulations can be tested for real: a
// crash keeps exactly what was made durable and nothing more.
//
// Model (POSIX-pessimistic, modelled on inodes):
//   - Every file keeps its current bytes and its durable bytes. File.Sync
//     copies current to durable, truncations included.
//   - Every directory keeps its current entries and its durable entries.
//     SyncDir(dir) copies current to durable: creations, removals and
//     renames inside dir survive a crash only after it.
//   - A crash (Crash) rebuilds the tree from the root following durable
//     entries only, and resets every reachable file to its durable bytes. So a
//     file that was synced but whose parent directory never was disappears;
//     a directory created by MkdirAll disappears unless its parent was synced;
//     a removed file whose directory was not synced comes back.
//   - A rename touches two entries. Each half is durable only after its own
//     directory is synced: with only the destination synced, the file is
//     found under both names after a crash (real journaling filesystems
//     commit both halves together; code that syncs both directories, or
//     renames within one directory, never notices the difference). If that
//     would give a directory two parents, the first one found in sorted
//     depth-first order keeps it.
//
// Mem has one root: "a/b", "/a/b" and "/x/../a/b" name the same file.
// All methods are safe for concurrent use; one mutex guards everything. Mem
// starts no goroutines and reads no clock; its only randomness comes from
// CrashOptions, so it is deterministic.
type Mem struct {
	// fault is read without mu so that a fault function may call back into
	// Mem (for example to clear itself) without deadlocking.
	fault atomic.Pointer[FaultFunc]

	mu         sync.Mutex
	root       *memNode
	generation uint64 // bumped by Crash; handles from older generations are dead
	used       int64  // bytes charged by live files (see memNode.charged)
	capacity   int64  // < 0: unlimited
	// spaces are the Space answers chosen for directories (SetSpace).
	spaces map[string]Space
	// mounts are the directories that are filesystems of their own
	// (Mount), as splitPath joins them: SyncFS syncs one filesystem.
	mounts map[string]bool
	// drops are the DropCache calls since the last CacheDrops.
	drops []CacheDrop
}

var _ FS = (*Mem)(nil)

// ErrCrashed is returned (wrapped) by every method of a file handle that was
// open when Mem.Crash ran: the process that held it is gone.
var ErrCrashed = errors.New("vfs: file handle invalidated by simulated crash")

// maxMemFileSize bounds one in-memory file so that a bad offset cannot ask
// for terabytes of RAM. Writes past it fail with EFBIG.
const maxMemFileSize = 1<<31 - 1 // also keeps int conversions safe on 32-bit

// NewMem returns an empty in-memory filesystem with unlimited capacity.
// The root directory always exists and is always durable.
func NewMem() *Mem {
	return &Mem{root: newMemDir(), capacity: -1}
}

// memNode is an inode: a file or a directory. Directory entries point at
// nodes, so an open handle keeps working after its name is removed, and a
// crash can bring a removed name back to the same durable bytes.
type memNode struct {
	isDir bool

	// Files only.
	data    []byte
	durable []byte
	// data[:dirtyFrom] equals durable[:dirtyFrom], and dirtyFrom <=
	// len(durable); Sync copies only data[dirtyFrom:], so appending to a log
	// and syncing often is not quadratic.
	dirtyFrom int
	nlink     int   // directory entries naming this file
	opens     int   // open handles
	charged   int64 // bytes currently counted in Mem.used

	// Directories only.
	entries        map[string]*memNode
	durableEntries map[string]*memNode
}

func newMemDir() *memNode {
	return &memNode{
		isDir:          true,
		entries:        map[string]*memNode{},
		durableEntries: map[string]*memNode{},
	}
}

// SetCapacity limits the total current size of all files (those with a name
// or an open handle). A write or truncate that would grow usage past the
// limit fails with an error wrapping syscall.ENOSPC and changes nothing (no
// short write). A negative limit removes it. Lowering the limit below the
// current usage removes nothing; it only blocks growth.
func (m *Mem) SetCapacity(bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.capacity = bytes
}

// Usage reports the bytes charged against the capacity: the current size of
// every file that still has a name or an open handle.
func (m *Mem) Usage() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// Corrupt simulates bit rot: it XORs the byte at offset with xor in both the
// current and the durable contents of the file (wherever they are long
// enough), so the damage survives a crash.
func (m *Mem) Corrupt(name string, offset int64, xor byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(name)
	if err != nil {
		return &os.PathError{Op: "corrupt", Path: name, Err: err}
	}
	if n.isDir {
		return &os.PathError{Op: "corrupt", Path: name, Err: syscall.EISDIR}
	}
	if offset < 0 || (offset >= int64(len(n.data)) && offset >= int64(len(n.durable))) {
		return &os.PathError{Op: "corrupt", Path: name, Err: syscall.EINVAL}
	}
	if offset < int64(len(n.data)) {
		n.data[offset] ^= xor
	}
	if offset < int64(len(n.durable)) {
		n.durable[offset] ^= xor
	}
	return nil
}

// recharge brings n's share of m.used up to date after any change to its
// size, links or open handles. Callers hold m.mu.
func (m *Mem) recharge(n *memNode) {
	if n.isDir {
		return
	}
	var want int64
	if n.nlink > 0 || n.opens > 0 {
		want = int64(len(n.data))
	}
	m.used += want - n.charged
	n.charged = want
}

// reserve checks that growing usage by grow bytes fits the capacity.
// Callers hold m.mu.
func (m *Mem) reserve(grow int64) error {
	if grow > 0 && m.capacity >= 0 && m.used+grow > m.capacity {
		return syscall.ENOSPC
	}
	return nil
}

// splitPath turns any path into its components below the single root.
// Cleaning "/"+name removes ".", ".." (never above the root) and repeated
// separators.
func splitPath(name string) []string {
	sep := string(filepath.Separator)
	clean := filepath.Clean(sep + name)
	if clean == sep {
		return nil
	}
	return strings.Split(strings.TrimPrefix(clean, sep), sep)
}

// walk follows parts from the root through current entries.
func (m *Mem) walk(parts []string) (*memNode, error) {
	n := m.root
	for _, part := range parts {
		if !n.isDir {
			return nil, syscall.ENOTDIR
		}
		child, ok := n.entries[part]
		if !ok {
			return nil, syscall.ENOENT
		}
		n = child
	}
	return n, nil
}

// lookup resolves name to its node. Callers hold m.mu.
func (m *Mem) lookup(name string) (*memNode, error) {
	return m.walk(splitPath(name))
}

// lookupParent resolves the directory holding name and name's base. The root
// has no parent: it cannot be created, removed or renamed (EINVAL).
// Callers hold m.mu.
func (m *Mem) lookupParent(name string) (dir *memNode, base string, err error) {
	parts := splitPath(name)
	if len(parts) == 0 {
		return nil, "", syscall.EINVAL
	}
	dir, err = m.walk(parts[:len(parts)-1])
	if err != nil {
		return nil, "", err
	}
	if !dir.isDir {
		return nil, "", syscall.ENOTDIR
	}
	return dir, parts[len(parts)-1], nil
}

// unlink accounts for a name of n going away. A file's bytes stay charged
// while a handle is open; a directory's subtree is emptied in the current
// view (its durable entries stay, so a crash before the parent is synced
// brings the subtree back). Callers hold m.mu.
func (m *Mem) unlink(n *memNode) {
	if !n.isDir {
		n.nlink--
		m.recharge(n)
		return
	}
	for name, child := range n.entries {
		m.unlink(child)
		delete(n.entries, name)
	}
}

// isWithin reports whether target is dir or lies below dir in the current
// tree. Callers hold m.mu.
func isWithin(target, dir *memNode) bool {
	if target == dir {
		return true
	}
	for _, child := range dir.entries {
		if child.isDir && isWithin(target, child) {
			return true
		}
	}
	return false
}

// Space implements FS for the whole in-memory filesystem: with a capacity
// (SetCapacity), its total and what is left of it, so a test picks the
// free space a broker sees by picking the capacity; without one, a
// practically unlimited disk.
func (m *Mem) Space(dir string) (Space, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if s, ok := m.spaces[d]; ok {
			return s, nil
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	if m.capacity < 0 {
		return Space{Total: math.MaxInt64, Free: math.MaxInt64 - m.used}, nil
	}
	return Space{Total: m.capacity, Free: max(m.capacity-m.used, 0)}, nil
}

// SetSpace makes Space answer s for dir and everything below it, whatever
// the capacity, as if dir were the mount point of a filesystem of its own:
// several simulated brokers sharing one Mem can then each see their own
// free space. It changes only what Space reports, not what writes may use.
func (m *Mem) SetSpace(dir string, s Space) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.spaces == nil {
		m.spaces = map[string]Space{}
	}
	m.spaces[filepath.Clean(dir)] = s
}

// ClearSpace undoes SetSpace for dir.
func (m *Mem) ClearSpace(dir string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.spaces, filepath.Clean(dir))
}
