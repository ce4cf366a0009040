package node

import "github.com/skein-log/skein/internal/storage"

// The partition as the replica fetcher session sees it: its follower side
// (following, appendFromLeader, truncateTo, restartAt) is in partition.go,
// over the replica core.

// follower is a partition as the fetcher session sees it
// (replicafetch.Replica). Reads go to the log (which has its own lock) and
// the published high watermark.
type follower struct{ p *partition }

func (f follower) Log() *storage.Log             { return f.p.log }
func (f follower) HighWatermark() int64          { return f.p.highWatermark.Load() }
func (f follower) TruncateTo(offset int64) error { return f.p.truncateTo(offset) }
func (f follower) RestartAt(offset int64) error  { return f.p.restartAt(offset) }
func (f follower) AppendFromLeader(b []byte, hw int64, e int32) error {
	return f.p.appendFromLeader(b, hw, e)
}
