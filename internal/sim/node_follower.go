package sim

import "github.com/skein-log/skein/internal/storage"

// The replica as the fetcher session sees it: its follower side
// (following, appendFromLeader, truncateTo, restartAt) is in
// node_partition.go, over the replica core.

// follower is a replica as the fetcher session sees it
// (replicafetch.Replica).
type follower struct{ r *replica }

func (f follower) Log() *storage.Log             { return f.r.log }
func (f follower) HighWatermark() int64          { return f.r.core.HighWatermark() }
func (f follower) TruncateTo(offset int64) error { return f.r.truncateTo(offset) }
func (f follower) RestartAt(offset int64) error  { return f.r.restartAt(offset) }
func (f follower) AppendFromLeader(b []byte, hw int64, e int32) error {
	return f.r.appendFromLeader(b, hw, e)
}
