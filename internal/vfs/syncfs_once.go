package vfs

// FSSyncs syncs each filesystem of a batch once: a reconcile that created
// replicas in several log directories makes them durable with one SyncFS
// per directory, however many replicas each holds. The first Sync of a
// directory calls SyncFS; later ones return its result.
type FSSyncs struct {
	fs      FS
	results map[string]error
}

// NewFSSyncs starts a batch on fs.
func NewFSSyncs(fs FS) *FSSyncs { return &FSSyncs{fs: fs, results: map[string]error{}} }

// Sync makes everything on dir's filesystem durable, once per batch.
func (s *FSSyncs) Sync(dir string) error {
	err, ok := s.results[dir]
	if !ok {
		err = s.fs.SyncFS(dir)
		s.results[dir] = err
	}
	return err
}
