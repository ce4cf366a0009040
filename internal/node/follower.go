package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/metadata"
)

// The follower side of a partition: what the replica fetcher session
// reads (through follower) and the actions it asks for (append, truncate,
// restart), carried out under the partition's lock.

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

// following reports the leader and epoch this replica follows.
func (p *partition) following() (leader, epoch int32, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.role != metadata.RoleFollower {
		return 0, 0, false
	}
	return p.state.Leader, p.state.LeaderEpoch, true
}

// appendFromLeader appends batches fetched from the leader, keeping their
// offsets and epochs, makes them durable before the next fetch reports
// them, and follows the leader's high watermark.
func (p *partition) appendFromLeader(data []byte, leaderHW int64, epoch int32) error {
	if len(data) > 0 {
		if err := p.b.checkFreeSpace(partitionLogDir(p)); err != nil {
			return err
		}
	}
	now := time.Now().UnixMilli()
	p.mu.Lock()
	if p.closed || p.role != metadata.RoleFollower || p.state.LeaderEpoch != epoch {
		p.mu.Unlock()
		return nil // the role changed while the fetch was in flight
	}
	if p.failed != nil {
		p.mu.Unlock()
		return p.failed
	}
	appended := false
	err := batch.Split(data, func(b []byte) error {
		h, err := batch.ParseHeader(b)
		if err != nil {
			return err
		}
		if h.LastOffset() < p.log.LogEndOffset() {
			return nil // already have it
		}
		if _, err := p.log.AppendReplica(b, now); err != nil {
			if isDiskFailure(err) {
				p.b.logDirFailed(p, err)
			}
			return err
		}
		p.producers.Apply(h)
		appended = true
		return nil
	})
	writeCaching := p.cfg.WriteCaching
	p.mu.Unlock()
	var appendErr error
	if err != nil && !errors.Is(err, batch.ErrTruncated) {
		// A partial trailing batch is normal (fetch size limit); anything
		// else is a corrupt transfer or a local disk problem. The batches
		// appended before it are still synced below: the next fetch
		// reports the log end as held durably, and the leader would
		// count unsynced batches towards acks=all (found by internal/sim).
		appendErr = fmt.Errorf("append from leader: %w", err)
	}
	var durable int64
	if appended && !writeCaching {
		start := time.Now()
		d, err := p.log.Sync()
		p.b.metrics.ObserveFsync(time.Since(start))
		if err != nil {
			p.mu.Lock()
			p.failLocked(err)
			p.mu.Unlock()
			return err
		}
		durable = d
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if writeCaching {
		p.durableEnd = p.log.LogEndOffset()
	} else if durable > p.durableEnd {
		p.durableEnd = durable
	}
	if p.leader != nil {
		// This replica became leader while the fsync ran (a controlled
		// shutdown moves leadership to a follower mid-fetch): its leader
		// state started from the durable end before this fsync. Tell it,
		// or the HW waits for an fsync that only a new append would
		// bring, and a producer retrying a batch already in the log
		// never gets its acks=all answer.
		if _, err := p.leader.OnLocalDurable(p.durableEnd); err != nil {
			p.b.log.Error("replication state refused a durable end", "partition", p.name(), "err", err)
		}
		p.progressLocked()
		return appendErr
	}
	if hw := min(leaderHW, p.durableEnd); hw > p.highWatermark.Load() {
		p.highWatermark.Store(hw)
	}
	return appendErr
}

// truncateTo removes the local log from offset on (a divergent tail) and
// rebuilds the producer state from what remains.
func (p *partition) truncateTo(offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader != nil {
		return errors.New("a leader never truncates its log")
	}
	before := p.log.LogEndOffset()
	if err := p.log.Truncate(offset); err != nil {
		return fmt.Errorf("truncate %s to %d: %w", p.name(), offset, err)
	}
	if offset >= before {
		// No record cut; Truncate only dropped an epoch that starts here
		// and holds nothing (one this broker led without writing): a
		// leader that never had it answers every fetch naming it as
		// diverging at this very offset, so it must go (Kafka's
		// UnifiedLog.truncateTo does the same).
		return nil
	}
	p.b.log.Info("truncated divergent log tail", "partition", p.name(), "from", before, "to", p.log.LogEndOffset())
	p.durableEnd = min(p.durableEnd, p.log.LogEndOffset())
	if hw := p.highWatermark.Load(); hw > p.log.LogEndOffset() {
		p.highWatermark.Store(p.log.LogEndOffset())
	}
	return p.rebuildProducerStateLocked()
}

// restartAt empties the local log and starts it at offset, when the
// leader no longer has what this replica would fetch next.
func (p *partition) restartAt(offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.log.TruncateFullyAndStartAt(offset); err != nil {
		return err
	}
	p.durableEnd = offset
	p.highWatermark.Store(offset)
	return p.rebuildProducerStateLocked()
}
