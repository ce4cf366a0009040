package sim

import (
	"errors"
	"fmt"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/metadata"
)

// The follower side of a replica: what the fetcher session reads (through
// follower) and the actions it asks for (internal/node's follower.go,
// single threaded).

// follower is a replica as the fetcher session sees it
// (replicafetch.Replica).
type follower struct{ r *replica }

func (f follower) Topic() string              { return f.r.topic }
func (f follower) Partition() int32           { return f.r.index }
func (f follower) LogStartOffset() int64      { return f.r.log.LogStartOffset() }
func (f follower) LogEndOffset() int64        { return f.r.log.LogEndOffset() }
func (f follower) HighWatermark() int64       { return f.r.hw }
func (f follower) LatestEpoch() (int32, bool) { return f.r.log.Epochs().Latest() }
func (f follower) EndOffsetFor(epoch int32) (int32, int64) {
	return f.r.log.Epochs().EndOffsetFor(epoch, f.r.log.LogEndOffset())
}
func (f follower) TruncateTo(offset int64) error { return f.r.truncateTo(offset) }
func (f follower) RestartAt(offset int64) error  { return f.r.restartAt(offset) }
func (f follower) AppendFromLeader(batches []byte, leaderHW int64, epoch int32) error {
	return f.r.appendFromLeader(batches, leaderHW, epoch)
}

// appendFromLeader is partition.appendFromLeader: append keeping offsets
// and epochs, fsync before the next fetch reports it, follow the leader's
// high watermark.
func (r *replica) appendFromLeader(data []byte, leaderHW int64, epoch int32) error {
	if r.role != metadata.RoleFollower || r.state.LeaderEpoch != epoch {
		return nil
	}
	if r.failed != nil {
		return r.failed
	}
	appended := false
	err := batch.Split(data, func(b []byte) error {
		h, err := batch.ParseHeader(b)
		if err != nil {
			return err
		}
		if h.LastOffset() < r.log.LogEndOffset() {
			return nil
		}
		if _, err := r.log.AppendReplica(b, r.nowMs()); err != nil {
			return err
		}
		r.producers.Apply(h)
		appended = true
		return nil
	})
	if err != nil && errors.Is(err, batch.ErrTruncated) {
		err = nil // a partial trailing batch is normal (fetch size limit)
	}
	// Sync what was appended even when a later batch failed: the next
	// fetch reports the log end as held durably, and the leader would
	// count unsynced batches towards acks=all (found by this simulator;
	// internal/node does the same since).
	var durable int64
	if appended && !r.cfg.WriteCaching {
		d, err := r.log.Sync()
		if err != nil {
			r.fail(err)
			return err
		}
		durable = d
	}
	if r.cfg.WriteCaching {
		r.durableEnd = r.log.LogEndOffset()
	} else if durable > r.durableEnd {
		r.durableEnd = durable
	}
	if hw := min(leaderHW, r.durableEnd); hw > r.hw {
		r.hw = hw
	}
	if err != nil {
		return fmt.Errorf("append from leader: %w", err)
	}
	return nil
}

func (r *replica) truncateTo(offset int64) error {
	if r.leader != nil {
		return errors.New("a leader never truncates its log")
	}
	before := r.log.LogEndOffset()
	if err := r.log.Truncate(offset); err != nil {
		return fmt.Errorf("truncate %s to %d: %w", r.name(), offset, err)
	}
	if r.log.LogEndOffset() == before {
		return nil
	}
	r.p.n.tracef("%s truncated divergent tail %d..%d", r.name(), r.log.LogEndOffset(), before)
	r.durableEnd = min(r.durableEnd, r.log.LogEndOffset())
	if r.hw > r.log.LogEndOffset() {
		r.hw = r.log.LogEndOffset()
	}
	return r.rebuildProducerState()
}

func (r *replica) restartAt(offset int64) error {
	if err := r.log.TruncateFullyAndStartAt(offset); err != nil {
		return err
	}
	r.durableEnd = offset
	r.hw = offset
	return r.rebuildProducerState()
}
