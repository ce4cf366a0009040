package vfs

import (
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"
)

// OpenFile implements FS. The permission bits are ignored. Opening a
// directory fails with EISDIR (Mem has no directory handles; use SyncDir).
func (m *Mem) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if err := m.inject(OpOpen, name); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.lookupParent(name)
	if err != nil {
		if err == syscall.EINVAL { // the root
			err = syscall.EISDIR
		}
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	n, exists := dir.entries[base]
	switch {
	case !exists && flag&os.O_CREATE == 0:
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
	case !exists:
		n = &memNode{}
		n.nlink = 1
		dir.entries[base] = n
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EEXIST}
	case n.isDir:
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	}
	// Linux truncates on O_TRUNC whatever the access mode; so do we.
	if flag&os.O_TRUNC != 0 {
		n.truncate(0)
	}
	access := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	n.opens++
	m.recharge(n)
	return &memFile{
		fs:         m,
		node:       n,
		name:       name,
		generation: m.generation,
		readable:   access != os.O_WRONLY,
		writable:   access != os.O_RDONLY,
		appendOnly: flag&os.O_APPEND != 0,
	}, nil
}

// Remove implements FS.
func (m *Mem) Remove(name string) error {
	if err := m.inject(OpRemove, name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.lookupParent(name)
	if err != nil {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	n, ok := dir.entries[base]
	if !ok {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.ENOENT}
	}
	if n.isDir && len(n.entries) > 0 {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
	}
	delete(dir.entries, base)
	m.unlink(n)
	return nil
}

// RemoveAll implements FS. Like os.RemoveAll, a missing path is not an error.
// The root cannot be removed (EINVAL).
func (m *Mem) RemoveAll(name string) error {
	if err := m.inject(OpRemove, name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.lookupParent(name)
	switch err {
	case nil:
	case syscall.ENOENT, syscall.ENOTDIR:
		return nil
	default:
		return &os.PathError{Op: "removeall", Path: name, Err: err}
	}
	n, ok := dir.entries[base]
	if !ok {
		return nil
	}
	delete(dir.entries, base)
	m.unlink(n)
	return nil
}

// Rename implements FS with Linux rename(2) rules: a file may replace a file,
// a directory may replace an empty directory, and a directory cannot move
// below itself.
func (m *Mem) Rename(oldName, newName string) error {
	if err := m.inject(OpRename, oldName); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	fail := func(err error) error {
		return &os.LinkError{Op: "rename", Old: oldName, New: newName, Err: err}
	}
	oldDir, oldBase, err := m.lookupParent(oldName)
	if err != nil {
		return fail(err)
	}
	src, ok := oldDir.entries[oldBase]
	if !ok {
		return fail(syscall.ENOENT)
	}
	newDir, newBase, err := m.lookupParent(newName)
	if err != nil {
		return fail(err)
	}
	dst := newDir.entries[newBase]
	if dst == src {
		// Same name, or two names for one file: POSIX says do nothing.
		return nil
	}
	if src.isDir {
		switch {
		case dst != nil && !dst.isDir:
			return fail(syscall.ENOTDIR)
		case dst != nil && len(dst.entries) > 0:
			return fail(syscall.ENOTEMPTY)
		case isWithin(newDir, src):
			return fail(syscall.EINVAL)
		}
	} else if dst != nil && dst.isDir {
		return fail(syscall.EISDIR)
	}
	newDir.entries[newBase] = src
	delete(oldDir.entries, oldBase)
	if dst != nil {
		m.unlink(dst)
	}
	return nil
}

// MkdirAll implements FS. The permission bits are ignored. New directories
// are durable only once their parent is synced.
func (m *Mem) MkdirAll(dir string, perm os.FileMode) error {
	if err := m.inject(OpMkdir, dir); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.root
	for _, part := range splitPath(dir) {
		child, ok := n.entries[part]
		if !ok {
			child = newMemDir()
			n.entries[part] = child
		}
		if !child.isDir {
			return &os.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		n = child
	}
	return nil
}

// ReadDir implements FS.
func (m *Mem) ReadDir(dir string) ([]DirEntry, error) {
	if err := m.inject(OpReadDir, dir); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(dir)
	if err == nil && !n.isDir {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return nil, &os.PathError{Op: "readdir", Path: dir, Err: err}
	}
	names := slices.Sorted(maps.Keys(n.entries))
	out := make([]DirEntry, 0, len(names))
	for _, name := range names {
		out = append(out, n.entries[name].describe(name))
	}
	return out, nil
}

// Stat implements FS. The root is named "/", as os.Stat names it.
func (m *Mem) Stat(name string) (DirEntry, error) {
	if err := m.inject(OpStat, name); err != nil {
		return DirEntry{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	parts := splitPath(name)
	n, err := m.walk(parts)
	if err != nil {
		return DirEntry{}, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	base := "/"
	if len(parts) > 0 {
		base = parts[len(parts)-1]
	}
	return n.describe(base), nil
}

// SyncDir implements FS: the directory's current entries become its durable
// entries. The directory itself survives a crash only if its own parent was
// synced after it was created.
func (m *Mem) SyncDir(dir string) error {
	if err := m.inject(OpSyncDir, dir); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(dir)
	if err == nil && !n.isDir {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return &os.PathError{Op: "syncdir", Path: dir, Err: err}
	}
	n.durableEntries = maps.Clone(n.entries)
	return nil
}

// Mount makes dir (which need not exist yet) the root of a filesystem of
// its own, as separate disks are for log directories: SyncFS of a path
// below it syncs only that filesystem, and SyncFS elsewhere leaves it
// alone. Without mounts the whole tree is one filesystem.
func (m *Mem) Mount(dir string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mounts == nil {
		m.mounts = map[string]bool{}
	}
	m.mounts[strings.Join(splitPath(dir), "/")] = true
}

// SyncFS implements FS: every file's current contents and every
// directory's current entries on the filesystem holding dir (the tree,
// or the mounted directory dir is in; see Mount) become durable.
func (m *Mem) SyncFS(dir string) error {
	if err := m.inject(OpSyncFS, dir); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(dir); err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	parts := splitPath(dir)
	root := 0 // parts[:root] is the filesystem's mount point
	for i := len(parts); i > 0; i-- {
		if m.mounts[strings.Join(parts[:i], "/")] {
			root = i
			break
		}
	}
	n, err := m.walk(parts[:root])
	if err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	m.syncTree(n, strings.Join(parts[:root], "/"))
	return nil
}

// syncTree makes n, at path p, and what is below it durable, except the
// filesystems mounted below it.
func (m *Mem) syncTree(n *memNode, p string) {
	if !n.isDir {
		n.durable = append(n.durable[:n.dirtyFrom], n.data[n.dirtyFrom:]...)
		n.dirtyFrom = len(n.data)
		return
	}
	n.durableEntries = maps.Clone(n.entries)
	for name, c := range n.entries {
		cp := name
		if p != "" {
			cp = p + "/" + name
		}
		if c.isDir && m.mounts[cp] {
			continue // another filesystem
		}
		m.syncTree(c, cp)
	}
}

func (n *memNode) describe(name string) DirEntry {
	if n.isDir {
		return DirEntry{Name: name, IsDir: true}
	}
	return DirEntry{Name: name, Size: int64(len(n.data))}
}
