package sim

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
	rcore "github.com/skein-log/skein/internal/replica"
	"github.com/skein-log/skein/internal/replicafetch"
	"github.com/skein-log/skein/internal/storage"
)

// replica is one partition replica on a process: the replica core that
// internal/node's partition wraps (internal/replica), wrapped here with the
// event queue. Every event steps the core and carries out its Ready at
// once, in this single thread.
type replica struct {
	p     *process
	topic string
	id    metadata.TopicID
	index int32
	log   *storage.Log
	core  *rcore.Replica

	syncQueued bool
	// coord is the group coordinator while this replica leads an offsets
	// partition (node_group.go).
	coord *coordinator
	// txnCoord is the transaction coordinator while this replica leads a
	// __transaction_state partition (node_txn.go).
	txnCoord *txnCoordinator
	// quietFetchMs are the followers' latest quiet fetch times
	// (rcore.Options.QuietFetchMs), as node's partition keeps them.
	quietFetchMs map[int32]int64
}

const maxProducersPerPartition = 1000

// simPageCacheWindow is the replicas' drop-behind window
// (log.page.cache.window.bytes). Far below the default, so that rolled
// segments (segment.bytes of 1-16 KiB) leave it and are advised out: Mem
// records the advice and, under -tags invariants, breaks on advice over
// bytes not yet synced, across crashes, truncations and moves. Advice
// changes nothing Mem serves, so no trace depends on it.
const simPageCacheWindow = 4 << 10

// openReplica opens the replica of partition st of t. fresh reports that
// its directory did not exist: it was created without fsyncs
// (storage.Options.Fresh, as node's reconcilePartitions creates new
// replicas), and the caller must sync the filesystem before applying it.
func (p *process) openReplica(t *metadata.Topic, st metadata.Partition, cfg config.TopicConfig) (r *replica, fresh bool, err error) {
	name := fmt.Sprintf("%s-%d", t.Name, st.Index)
	quiet := map[int32]int64{}
	dir := p.replicaDir(name)
	if _, err := p.n.fs.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := p.n.fs.MkdirAll(dir, 0o755); err != nil {
			return nil, false, fmt.Errorf("create %s: %w", dir, err)
		}
		fresh = true
	}
	core, err := rcore.Open(p.n.fs, dir, name, cfg, rcore.Options{
		LocalID:             p.n.id,
		ReplicaLagTimeMaxMs: replicaLagMax.Milliseconds(),
		MaxProducers:        maxProducersPerPartition,
		Logger:              p.log,

		ISRResendBackoffMinMs: isrResendBackoffMin.Milliseconds(),
		ISRResendBackoffMaxMs: isrResendBackoffMax.Milliseconds(),
		QuietFetchMs: func(id int32) int64 {
			if ms, ok := quiet[id]; ok {
				return ms
			}
			return math.MinInt64
		},
		Fresh:           fresh,
		PageCacheWindow: simPageCacheWindow,
	})
	if err != nil {
		return nil, false, err
	}
	return &replica{p: p, topic: t.Name, id: t.ID, index: st.Index, log: core.Log(), core: core, quietFetchMs: quiet}, fresh, nil
}

func (r *replica) name() string { return fmt.Sprintf("%s-%d", r.topic, r.index) }

func (r *replica) nowMs() int64 { return r.p.n.c.nowMs() }

// ready carries out what the core asked for. The checker hooks run before
// the answers, as they would be seen by a client.
func (r *replica) ready(rd rcore.Ready) {
	n := r.p.n
	if n.proc != r.p {
		// Nothing of a killed process runs again (node.after and
		// process.call drop its events); a replica of one stepping here
		// would be a harness leak writing into the next process's files.
		n.c.violation("%s: %s of a dead process (not incarnation %d) ran", n, r.name(), n.incarnation)
		return
	}
	for _, v := range rd.Violations {
		n.c.violation("on %s: %s", n, v)
	}
	if rd.BecameLeader {
		n.tracef("leads %s epoch %d isr %v log end %d hw %d", r.name(), rd.LeaderEpoch, r.core.State().ISR, r.log.LogEndOffset(), r.core.HighWatermark())
		n.c.onBecomeLeader(n, r, rd.LeaderEpoch)
	}
	if r.core.IsLeader() && (rd.BecameLeader || rd.HWChanged) {
		n.c.onLeaderHW(n, r)
	}
	if rd.Resigned {
		n.tracef("no longer leads %s, epoch %d", r.name(), rd.LeaderEpoch)
		r.stopCoordinator("leadership moved")
		r.stopTxnCoordinator("leadership moved")
	}
	if rd.BecameLeader && r.topic == offsetsTopic {
		r.startCoordinator()
	}
	if rd.BecameLeader && r.topic == txnStateTopic {
		r.startTxnCoordinator()
	}
	r.p.pokeFetches(rd.WakeFollowers, rd.WakeConsumers)
	if rd.Sync {
		r.scheduleSync()
	}
	if rd.FlushAfterMs > 0 {
		n.after(msDuration(rd.FlushAfterMs), func() { r.ready(r.core.FlushTimer()) })
	}
	for _, t := range rd.Timeouts {
		id := t.ID
		n.after(msDuration(t.AfterMs), func() { r.ready(r.core.Expire(id)) })
	}
	if rd.Propose != nil {
		n.tracef("%s proposes ISR %v (epoch %d, partition epoch %d)", r.name(), rd.Propose.NewISR, rd.Propose.LeaderEpoch, rd.Propose.PartitionEpoch)
		r.p.sendISRChange(r, *rd.Propose)
	}
	if rd.Resend != nil {
		change, seq := rd.Resend.Change, rd.Resend.Seq
		n.after(msDuration(rd.Resend.AfterMs), func() { r.ready(r.core.ResendISR(change, seq)) })
	}
	if rd.DiskFailed != nil {
		r.p.logDirFailed(r, rd.DiskFailed)
	}
	for _, target := range rd.AcksAll {
		n.c.onAcksAll(r, target)
	}
	n.c.onLSO(n, r)
	if rd.BecameLeader {
		// A promoted replica must start from the open transactions its
		// log holds (checked again for every replica at the end).
		n.c.checkOpenTransactions(n, r)
	}
	for _, a := range rd.Answers {
		a.Done(a.Result)
	}
}

// apply gives the replica the image's state and the role the same image
// gives this node.
func (r *replica) apply(st metadata.Partition, role metadata.ReplicaRole, cfg config.TopicConfig) error {
	rd, err := r.core.Apply(st, role, cfg, r.nowMs())
	r.ready(rd)
	return err
}

func (r *replica) produce(req api.ProduceParams, done func(api.ProduceResult)) {
	_, rd := r.core.Produce(req, done, r.nowMs())
	r.ready(rd)
}

func (r *replica) writeTxnMarker(req api.TxnMarkerParams, done func(api.ProduceResult)) {
	_, rd := r.core.WriteTxnMarker(req, done, r.nowMs())
	r.ready(rd)
}

func (r *replica) awaitCommitted(target int64, timeout time.Duration, done func(error)) {
	_, rd := r.core.AwaitCommitted(target, timeout.Milliseconds(), done)
	r.ready(rd)
}

// scheduleSync is the flusher: one fsync, a moment later, covers every
// append before it started.
func (r *replica) scheduleSync() {
	if r.syncQueued {
		return
	}
	r.syncQueued = true
	r.p.n.after(r.p.n.c.s.between(0, maxFsyncDelay), func() {
		r.syncQueued = false
		durable, err := r.log.Sync()
		r.ready(r.core.Synced(durable, err))
		r.log.DropCache()
		r.p.noteCache(r)
	})
}

// logDirFailed is a log write or fsync that failed on this node's disk.
// internal/node takes the directory offline and hands its partitions over
// through a controlled shutdown before it exits; the simulated node has no
// controlled shutdown, and fencing every replica without moving its
// leaderships would leave partitions led by a node that serves nothing
// until the operator's restart (which, being unclean, then takes it out of
// the ELR of write.caching topics: seed 1020 at 2m lost its partition so).
// So only the failed log is fenced (storage.Log refuses after an I/O
// error, the core after a failed fsync), as before the shared core.
func (p *process) logDirFailed(from *replica, err error) {
	p.n.tracef("log write failed at %s (the broker would hand over and stop): %v", from.name(), err)
}

// --- the follower side ---

// following reports the leader and epoch this replica follows.
// A replica is what the replica fetcher session follows
// (replicafetch.Replica).
var _ replicafetch.Replica = (*replica)(nil)

func (r *replica) Log() *storage.Log    { return r.log }
func (r *replica) HighWatermark() int64 { return r.core.HighWatermark() }

func (r *replica) following() (leader, epoch int32, ok bool) { return r.core.Following() }

// AppendFromLeader appends what the leader sent, fsyncs it before the next
// fetch reports it, and follows the leader's high watermark.
func (r *replica) AppendFromLeader(data []byte, leaderHW int64, epoch int32) error {
	accepted, needSync, rd, appendErr := r.core.AppendFromLeader(data, epoch, r.nowMs())
	r.ready(rd)
	if !accepted {
		return appendErr
	}
	var durable int64
	var syncErr error
	if needSync {
		durable, syncErr = r.log.Sync()
	}
	rd, err := r.core.FollowerSynced(durable, syncErr, leaderHW)
	r.ready(rd)
	if needSync && syncErr == nil {
		r.log.DropCache()
		r.p.noteCache(r)
	}
	if err != nil {
		return err
	}
	return appendErr
}

// TruncateTo removes the local log from offset on (a divergent tail).
func (r *replica) TruncateTo(offset int64) error {
	rd, err := r.core.TruncateTo(offset)
	r.ready(rd)
	return err
}

// RestartAt empties the local log and starts it at offset.
func (r *replica) RestartAt(offset int64) error {
	rd, err := r.core.RestartAt(offset)
	r.ready(rd)
	return err
}
