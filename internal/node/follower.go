package node

// The partition as the replica fetcher session sees it: its follower side
// (following, appendFromLeader, truncateTo, restartAt) is in partition.go,
// over the replica core.

// follower is a partition as the fetcher session sees it
// (replicafetch.Replica). Reads go to the log (which has its own lock) and
// the published high watermark.
type follower struct{ p *partition }

func (f follower) Topic() string         { return f.p.topic }
func (f follower) Partition() int32      { return f.p.index }
func (f follower) LogStartOffset() int64 { return f.p.log.LogStartOffset() }
func (f follower) LogEndOffset() int64   { return f.p.log.LogEndOffset() }
func (f follower) HighWatermark() int64  { return f.p.highWatermark.Load() }
func (f follower) LatestEpoch() (int32, bool) {
	return f.p.log.Epochs().Latest()
}
func (f follower) EndOffsetFor(epoch int32) (int32, int64) {
	return f.p.log.Epochs().EndOffsetFor(epoch, f.p.log.LogEndOffset())
}
func (f follower) TruncateTo(offset int64) error { return f.p.truncateTo(offset) }
func (f follower) RestartAt(offset int64) error  { return f.p.restartAt(offset) }
func (f follower) AppendFromLeader(batches []byte, leaderHW int64, epoch int32) error {
	return f.p.appendFromLeader(batches, leaderHW, epoch)
}
