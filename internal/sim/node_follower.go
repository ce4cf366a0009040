package sim

// The replica as the fetcher session sees it: its follower side
// (following, appendFromLeader, truncateTo, restartAt) is in
// node_partition.go, over the replica core.

// follower is a replica as the fetcher session sees it
// (replicafetch.Replica).
type follower struct{ r *replica }

func (f follower) Topic() string              { return f.r.topic }
func (f follower) Partition() int32           { return f.r.index }
func (f follower) LogStartOffset() int64      { return f.r.log.LogStartOffset() }
func (f follower) LogEndOffset() int64        { return f.r.log.LogEndOffset() }
func (f follower) HighWatermark() int64       { return f.r.core.HighWatermark() }
func (f follower) LatestEpoch() (int32, bool) { return f.r.log.Epochs().Latest() }
func (f follower) EndOffsetFor(epoch int32) (int32, int64) {
	return f.r.log.Epochs().EndOffsetFor(epoch, f.r.log.LogEndOffset())
}
func (f follower) TruncateTo(offset int64) error { return f.r.truncateTo(offset) }
func (f follower) RestartAt(offset int64) error  { return f.r.restartAt(offset) }
func (f follower) AppendFromLeader(batches []byte, leaderHW int64, epoch int32) error {
	return f.r.appendFromLeader(batches, leaderHW, epoch)
}
