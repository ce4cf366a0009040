package sim

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/grouphost"
)

// The group coordinator's runtime: the grouphost.Host internal/node runs,
// on the event queue. Each __consumer_offsets partition this node leads
// has a coordinator for that leader epoch, loaded by replaying the
// partition's log when leadership arrives; the Host's writes go through
// the replica's produce (acks=all) and its awaitCommitted, their outcomes
// come back as events, and a Ready asking for a reload stops the Host and
// loads the partition again. Timers run on the event queue at the Host's
// TickAt, and ExpireOffsets on a schedule. The harness creates
// __consumer_offsets with the data topic (cluster.go), so
// EnsureOffsetsTopic only reports whether this node's image has it yet.

const (
	offsetsTopic = api.OffsetsTopic
	// groupWriteTimeout bounds the wait for a coordinator's records
	// (production: offsets.commit.timeout.ms, 5s; shortened with the rest
	// of the simulated timings).
	groupWriteTimeout    = 2 * time.Second
	groupExpireInterval  = 2 * time.Second
	groupLoadRetryPeriod = time.Second
)

// simGroupConfig is production's defaults with the session and rebalance
// timings scaled down like the rest of the simulated runtime.
func simGroupConfig() group.Config {
	cfg := group.DefaultConfig()
	cfg.InitialRebalanceDelayMs = 300
	cfg.MinSessionTimeoutMs = 500
	cfg.MaxSessionTimeoutMs = 30_000
	return cfg
}

// coordinator wraps the Host of one offsets partition in one leader epoch
// (internal/node's groupCoordinator).
type coordinator struct {
	r     *replica
	epoch int32
	host  *grouphost.Host
	// timerGen invalidates tick timers armed before the latest rearm.
	timerGen uint64
	// loaded is the members' group's generation as replayed (0: absent),
	// reported to the checker when the replayed log is committed, unless
	// a write of this coordinator was reported committed first.
	loaded       int32
	wroteCommits bool
}

var _ grouphost.Handle = (*coordinator)(nil)

// startCoordinator replaces the replica's coordinator with one for its
// current leader epoch, loaded from the log.
func (r *replica) startCoordinator() {
	r.stopCoordinator("new leader epoch")
	l, err := grouphost.Replay(simGroupConfig(), r.p.n.c.s.rng.Uint64(), r.log, r.name(), r.nowMs())
	if err != nil {
		r.p.n.tracef("%s: loading consumer groups failed: %v; retrying", r.name(), err)
		epoch := r.core.LeaderEpoch()
		r.p.n.after(groupLoadRetryPeriod, func() {
			if r.coord == nil && r.core.IsLeader() && r.core.LeaderEpoch() == epoch && r.p.parts[partKey{r.id, r.index}] == r {
				r.startCoordinator()
			}
		})
		return
	}
	gc := &coordinator{r: r, epoch: r.core.LeaderEpoch(), host: grouphost.New(r.name())}
	if d := l.Coordinator.DescribeGroup(memberGroup); d.State != group.Dead {
		gc.loaded = d.Generation
	}
	r.coord = gc
	r.p.n.tracef("%s: coordinating %d groups in epoch %d", r.name(), len(l.Coordinator.ListGroups(nil)), gc.epoch)
	_ = gc.Do(func(h *grouphost.Host, now int64) (grouphost.Ready, error) { return h.Activate(now, l), nil })
	r.p.n.c.check.coordinatorLoaded(gc)
	gc.scheduleExpire()
}

// stopCoordinator unloads the replica's coordinator: parked requests are
// answered NOT_COORDINATOR so their clients look for the new one.
func (r *replica) stopCoordinator(why string) {
	gc := r.coord
	if gc == nil {
		return
	}
	r.coord = nil
	gc.timerGen++
	gc.carryOut(gc.host.Stop())
	r.p.n.tracef("%s: stopped coordinating groups of epoch %d (%s)", r.name(), gc.epoch, why)
}

// Do is grouphost.Handle's.
func (gc *coordinator) Do(op func(h *grouphost.Host, now int64) (grouphost.Ready, error)) error {
	rd, err := op(gc.host, gc.r.nowMs())
	if err != nil {
		return err
	}
	gc.carryOut(rd)
	return nil
}

// Writable is grouphost.Handle's.
func (gc *coordinator) Writable() error {
	if !gc.r.core.IsLeader() {
		return kerr.NotLeaderForPartition
	}
	return gc.r.core.AcksAllWritable()
}

// carryOut starts the Ready's writes (their outcomes come back as events
// after this one, the append may complete inside it), sends its answers
// and rearms the tick.
func (gc *coordinator) carryOut(rd grouphost.Ready) {
	r := gc.r
	for _, w := range rd.Writes {
		done := func(err error) { r.p.n.after(0, func() { gc.written(w.ID, err) }) }
		if w.Records == nil {
			r.awaitCommitted(w.AwaitCommitted, groupWriteTimeout, func(err error) {
				if err == nil && !gc.wroteCommits {
					if t, ok := r.p.image.Topic(offsetsTopic); ok && group.PartitionFor(memberGroup, int32(len(t.Partitions))) == r.index {
						r.p.n.c.check.groupLoadCommitted(gc.loaded)
					}
				}
				done(err)
			})
			continue
		}
		gc.append(w.Records, w.Txn, done)
	}
	for _, p := range rd.Problems {
		r.p.n.c.violation("%s", p)
	}
	for _, w := range rd.Warnings {
		r.p.n.tracef("%s", w)
	}
	for _, send := range rd.Send {
		send()
	}
	if rd.Reload != nil {
		r.p.n.after(0, gc.fail)
	}
	gc.rearm(rd)
}

func (gc *coordinator) written(id uint64, err error) {
	_ = gc.Do(func(h *grouphost.Host, now int64) (grouphost.Ready, error) { return h.Written(now, id, err), nil })
}

// append appends records as one acks=all batch (transactional when txn
// is set); the checker follows the committed ones.
func (gc *coordinator) append(recs []group.Record, txn *group.TxnBatch, done func(error)) {
	r := gc.r
	req := api.ProduceParams{Topic: r.id, Partition: r.index, Batches: [][]byte{grouphost.BuildBatch(recs, txn, r.nowMs())},
		Acks: -1, Timeout: groupWriteTimeout, Coordinator: true}
	if txn != nil {
		req.VerifyTxn, req.VerificationGuard = txn.VerifyTxn, txn.VerificationGuard
	}
	r.produce(req,
		func(res api.ProduceResult) {
			if res.Err == nil {
				gc.wroteCommits = true
				r.p.n.c.check.groupRecordsCommitted(recs)
			}
			done(res.Err)
		})
}

// fail stops the coordinator after a Ready asked for a reload and loads
// the partition again grouphost.ReloadBackoff later, if the replica still
// leads it in the same epoch and no other start came first (as node's
// coordinatorSet.replaceFailed).
func (gc *coordinator) fail() {
	r := gc.r
	if gc.host.Stopped() || r.coord != gc {
		return
	}
	r.stopCoordinator("write failed")
	r.p.n.after(grouphost.ReloadBackoff, func() {
		if r.coord == nil && r.core.IsLeader() && r.core.LeaderEpoch() == gc.epoch && r.p.parts[partKey{r.id, r.index}] == r {
			r.startCoordinator()
		}
	})
}

// rearm schedules a Tick at the Host's next deadline.
func (gc *coordinator) rearm(rd grouphost.Ready) {
	if !gc.host.Active() {
		return
	}
	gc.timerGen++
	if !rd.HasTick {
		return
	}
	gen := gc.timerGen
	gc.r.p.n.after(msDuration(rd.TickAt-gc.r.nowMs()), func() {
		if gc.timerGen != gen {
			return
		}
		_ = gc.Do(func(h *grouphost.Host, now int64) (grouphost.Ready, error) { return h.Tick(now) })
	})
}

func (gc *coordinator) scheduleExpire() {
	gc.r.p.n.after(groupExpireInterval, func() {
		if err := gc.Do(func(h *grouphost.Host, now int64) (grouphost.Ready, error) { return h.ExpireOffsets(now) }); err == nil {
			gc.scheduleExpire()
		}
	})
}
