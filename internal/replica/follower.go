package replica

import (
	"errors"
	"fmt"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/metadata"
)

// Following reports the leader and epoch this replica follows.
func (r *Replica) Following() (leader, epoch int32, ok bool) {
	if r.closed || r.role != metadata.RoleFollower {
		return 0, 0, false
	}
	return r.state.Leader, r.state.LeaderEpoch, true
}

// AppendFromLeader appends batches fetched from the leader of epoch,
// keeping their offsets and epochs. Unless accepted is false (the role
// changed while the fetch was in flight, or the log failed), the wrapper
// must then call FollowerSynced. needSync says an fsync is due before
// the next fetch reports them as held: the wrapper runs it (outside its
// lock) and reports it with FollowerSynced, which also follows the
// leader's high watermark. A partial trailing batch is normal (the fetch
// size limit); any other error is a corrupt transfer or a local disk
// problem, and the batches appended before it are still synced: the next
// fetch reports the log end as held durably, and the leader would count
// unsynced batches towards acks=all (found by internal/sim).
func (r *Replica) AppendFromLeader(data []byte, epoch int32, nowMs int64) (accepted, needSync bool, rd Ready, err error) {
	if r.closed || r.role != metadata.RoleFollower || r.state.LeaderEpoch != epoch {
		return false, false, rd, nil // the role changed while the fetch was in flight
	}
	if r.failed != nil {
		return false, false, rd, r.failed
	}
	appended := false
	err = batch.Split(data, func(b []byte) error {
		h, err := batch.ParseHeader(b)
		if err != nil {
			return err
		}
		if h.LastOffset() < r.log.LogEndOffset() {
			return nil // already have it
		}
		if _, err := r.log.AppendReplica(b, nowMs); err != nil {
			if IsDiskFailure(err) {
				rd.DiskFailed = err
			}
			return err
		}
		appended = true
		// The follower keeps the leader's producer state and open
		// transactions, so a promotion starts from the same LSO.
		return r.applyAppended(h, b)
	})
	if errors.Is(err, batch.ErrTruncated) {
		err = nil
	}
	if err != nil {
		err = fmt.Errorf("append from leader: %w", err)
	}
	return true, appended && !r.cfg.WriteCaching, rd, err
}

// FollowerSynced completes AppendFromLeader: durable and syncErr are the
// fsync's result (zero and nil when none was needed).
func (r *Replica) FollowerSynced(durable int64, syncErr error, leaderHW int64) (Ready, error) {
	var rd Ready
	if r.closed {
		return rd, nil // closed under the fsync, as in Synced
	}
	if syncErr != nil {
		r.fail(syncErr, &rd)
		return rd, syncErr
	}
	durable = min(durable, r.log.DurableEndOffset()) // as in Synced
	if r.cfg.WriteCaching {
		r.durableEnd = r.log.LogEndOffset()
	} else if durable > r.durableEnd {
		r.durableEnd = durable
	}
	if r.leader != nil {
		// This replica became leader while the fsync ran (a controlled
		// shutdown moves leadership to a follower mid-fetch): its leader
		// state started from the durable end before this fsync. Tell it,
		// or the HW waits for an fsync that only a new append would
		// bring, and a producer retrying a batch already in the log never
		// gets its acks=all answer.
		if _, err := r.leader.OnLocalDurable(r.durableEnd); err != nil {
			r.broken(&rd, "replication state refused a durable end: %v", err)
		}
		r.progress(&rd)
		return rd, nil
	}
	if hw := min(leaderHW, r.durableEnd); hw > r.hw {
		r.hw = hw
		rd.HighWatermark, rd.HWChanged = hw, true
	}
	return rd, nil
}

// TruncateTo removes the local log from offset on (a divergent tail) and
// rebuilds the producer state from what remains. At the log end too:
// storage.Log.Truncate then drops an epoch that starts there and holds
// nothing (one this broker led without writing), which a leader that never
// had it answers every fetch naming as diverging at this very offset
// (Kafka's UnifiedLog.truncateTo does the same).
func (r *Replica) TruncateTo(offset int64) (Ready, error) {
	var rd Ready
	if r.leader != nil {
		return rd, errors.New("a leader never truncates its log")
	}
	before := r.log.LogEndOffset()
	if err := r.log.Truncate(offset); err != nil {
		return rd, fmt.Errorf("truncate %s to %d: %w", r.name, offset, err)
	}
	if r.log.LogEndOffset() >= before {
		return rd, nil
	}
	r.opts.Logger.Info("truncated divergent log tail", "from", before, "to", r.log.LogEndOffset())
	r.durableEnd = min(r.durableEnd, r.log.LogEndOffset())
	if r.hw > r.log.LogEndOffset() {
		r.hw = r.log.LogEndOffset()
		rd.HighWatermark, rd.HWChanged = r.hw, true
	}
	return rd, r.rebuildProducerState()
}

// RestartAt empties the local log and starts it at offset, when the
// leader no longer has what this replica would fetch next.
func (r *Replica) RestartAt(offset int64) (Ready, error) {
	var rd Ready
	if err := r.log.TruncateFullyAndStartAt(offset); err != nil {
		return rd, err
	}
	r.durableEnd = offset
	r.hw = offset
	rd.HighWatermark, rd.HWChanged = offset, true
	return rd, r.rebuildProducerState()
}
