package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/ctrlcore"
	"github.com/skein-log/skein/internal/fetchsession"
	"github.com/skein-log/skein/internal/loglevel"
	"github.com/skein-log/skein/internal/metadata"
	rcore "github.com/skein-log/skein/internal/replica"
)

// backend is api.Backend for a simulated process, so the production
// handlers (Produce, Fetch, OffsetForLeaderEpoch, Metadata,
// InitProducerId, ListOffsets) serve the simulated clients and followers.
type backend struct{ p *process }

var _ api.Backend = backend{}

func (x backend) NodeID() int32                     { return x.p.n.id }
func (x backend) Config() *config.Broker            { return x.p.cfg }
func (x backend) Loggers() *loglevel.Levels         { return x.p.levels }
func (x backend) Image() *metadata.Image            { return x.p.image }
func (x backend) NewTopicID() metadata.TopicID      { return x.p.n.c.newTopicID() }
func (x backend) IsActiveController() bool          { return x.p.ctl.Active() }
func (x backend) ActiveControllerID() int32         { return x.p.controller }
func (x backend) LeaderSuspect(int32) bool          { return false }
func (x backend) SettleSuspects()                   {}
func (x backend) FencedAtMs(id int32) (int64, bool) { return x.p.fenceTimes.FencedAtMs(id) }
func (x backend) NowMs() int64                      { return x.p.n.c.nowMs() }
func (x backend) Controller() api.ControllerBackend { return ctrlcore.Backend{R: x.p} }

func (x backend) Quorum() api.QuorumBackend { return simQuorumAdmin(x) }

// DescribeLogDirs and AlterReplicaLogDir: the node's log directories and
// the moves between them (logdirs.go).
func (x backend) DescribeLogDirs() []api.LogDirDescription { return x.p.describeLogDirs() }

func (x backend) AlterReplicaLogDir(topic string, index int32, dir string) error {
	return x.p.alterReplicaLogDir(topic, index, dir)
}

// DescribeProducers serves no simulated client; it answers as node does
// from the replica's producer table.
func (x backend) DescribeProducers(id metadata.TopicID, index int32) ([]api.ProducerState, error) {
	r, err := x.replicaOf(id, index)
	if err != nil {
		return nil, err
	}
	entries, err := r.core.Producers()
	if err != nil {
		return nil, err
	}
	return api.ProducerStates(entries), nil
}

// FetchSessions is node/fetch_sessions.go's wrapper: the same core, on
// simulated time and without a lock (one goroutine).
func (x backend) FetchSessions() api.FetchSessions { return simSessions(x) }

type simSessions backend

func (s simSessions) Begin(r fetchsession.Request) fetchsession.Context {
	r.NowMs = s.p.n.c.nowMs()
	return s.p.sessions.Begin(r)
}

func (s simSessions) Complete(ctx fetchsession.Context, results []fetchsession.Result) fetchsession.Outcome {
	return s.p.sessions.Complete(ctx, results, s.p.n.c.nowMs())
}

func (x backend) AllocateProducerID() (int64, error) { return x.p.allocateProducerID() }

func (x backend) TopicConfig(t *metadata.Topic) (config.TopicConfig, error) {
	return config.ResolveTopic(x.p.cfg, t.Configs)
}

// Commit and Forward serve admin requests, which simulated clients do
// not send: topics are created by the harness through the controller.
func (x backend) Commit([]metadata.Record) error {
	return fmt.Errorf("%w: admin requests are not simulated", kerr.InvalidRequest)
}

// Reassign: the simulator's reassignments are submitted to the
// controller core by the schedule, as its topics are.
func (x backend) Reassign([]controller.Reassignment, bool) ([]error, error) {
	return nil, fmt.Errorf("%w: admin requests are not simulated", kerr.InvalidRequest)
}

// UnregisterBroker: simulated clients send no admin requests.
func (x backend) UnregisterBroker(int32) error {
	return fmt.Errorf("%w: admin requests are not simulated", kerr.InvalidRequest)
}

func (x backend) Forward(r *api.Request, respond api.Respond) {
	respond(nil)
}

func (x backend) replicaOf(id metadata.TopicID, index int32) (*replica, error) {
	r := x.p.parts[partKey{id, index}]
	if r == nil {
		t, ok := x.p.image.TopicByID(id)
		if !ok || index < 0 || int(index) >= len(t.Partitions) {
			return nil, kerr.UnknownTopicOrPartition
		}
		return nil, kerr.NotLeaderForPartition
	}
	return r, nil
}

func (x backend) Produce(req api.ProduceParams, done func(api.ProduceResult)) {
	r, err := x.replicaOf(req.Topic, req.Partition)
	if err != nil {
		done(api.ProduceResult{Err: err, BaseOffset: -1, LogAppendTime: -1})
		return
	}
	r.produce(req, done)
}

func (x backend) ListOffset(id metadata.TopicID, index int32, ts int64, isolation int8) (api.OffsetResult, error) {
	r, err := x.replicaOf(id, index)
	if err == nil && !r.core.IsLeader() {
		err = kerr.NotLeaderForPartition
	}
	if err != nil {
		return api.OffsetResult{}, err
	}
	bound := r.core.HighWatermark()
	if isolation == api.ReadCommitted {
		bound = r.core.LastStableOffset()
	}
	return rcore.ListOffset(r.log, ts, bound, r.core.LeaderEpoch())
}

// WriteTxnMarker is api.Backend's, as node's: through the replica core.
func (x backend) WriteTxnMarker(req api.TxnMarkerParams, done func(error)) {
	r, err := x.replicaOf(req.Topic, req.Partition)
	if err != nil {
		done(err)
		return
	}
	r.writeTxnMarker(req, func(res api.ProduceResult) { done(res.Err) })
}

func (x backend) EpochEndOffset(id metadata.TopicID, index int32, current, requested int32) (int32, int64, error) {
	r, err := x.replicaOf(id, index)
	if err == nil && !r.core.IsLeader() {
		err = kerr.NotLeaderForPartition
	}
	if err != nil {
		return -1, -1, err
	}
	if err := r.core.CheckLeaderEpoch(current); err != nil {
		return -1, -1, err
	}
	epoch, end := r.log.Epochs().EndOffsetFor(requested, r.log.LogEndOffset())
	return epoch, end, nil
}

// fetchWaiter is the long poll of a fetch: read now, and if min_bytes is
// not met, wait for a poke (new data or a high watermark move) or
// max_wait.
type fetchWaiter struct {
	p                *process
	params           api.FetchParams
	done             func([]api.FetchResult)
	positionRecorded bool
	finished         bool
}

func (x backend) Fetch(params api.FetchParams, done func([]api.FetchResult)) {
	w := &fetchWaiter{p: x.p, params: params, done: done}
	results, enough := w.read()
	w.positionRecorded = true
	if enough || params.MaxWait <= 0 {
		done(results)
		return
	}
	x.p.waiters = append(x.p.waiters, w)
	x.p.n.after(params.MaxWait, func() { w.finish() })
}

func (w *fetchWaiter) finish() {
	if w.finished {
		return
	}
	w.finished = true
	w.p.waiters = slices.DeleteFunc(w.p.waiters, func(o *fetchWaiter) bool { return o == w })
	results, _ := w.read()
	w.done(results)
}

// pokeFetches re-reads the waiting fetches of followers, of consumers or
// of both once, after the current event.
func (p *process) pokeFetches(followers, consumers bool) {
	if len(p.waiters) == 0 || !followers && !consumers {
		return
	}
	p.pokeFollowers = p.pokeFollowers || followers
	p.pokeConsumers = p.pokeConsumers || consumers
	if p.pokeQueued {
		return
	}
	p.pokeQueued = true
	p.n.after(0, func() {
		followers, consumers := p.pokeFollowers, p.pokeConsumers
		p.pokeQueued, p.pokeFollowers, p.pokeConsumers = false, false, false
		for _, w := range slices.Clone(p.waiters) {
			if w.finished {
				continue
			}
			if fromFollower := w.params.ReplicaID >= 0; fromFollower && !followers || !fromFollower && !consumers {
				continue
			}
			if results, enough := w.read(); enough {
				w.finished = true
				p.waiters = slices.DeleteFunc(p.waiters, func(o *fetchWaiter) bool { return o == w })
				w.done(results)
			}
		}
	})
}

// read is the shared fetch read plan (replica.ReadFetch) over this
// process's replicas.
func (w *fetchWaiter) read() (results []api.FetchResult, enough bool) {
	x := backend{w.p}
	var throttle rcore.Throttle
	if lr := w.leaderThrottle(); lr != nil {
		throttle = lr
	}
	return rcore.ReadFetch(w.params, func(i int) (rcore.Source, error) {
		fp := w.params.Partitions[i]
		r, err := x.replicaOf(fp.Topic, fp.Partition)
		if err != nil {
			return nil, err
		}
		return r, nil
	}, !w.positionRecorded, w.p.n.c.nowMs(), throttle)
}

// Admit is replica.Source.Admit. A follower's fetch that the core's
// Quiet admits leaves only its time, as node's partition.admitQuiet does.
func (r *replica) Admit(fp api.FetchPartition, replicaID int32, record bool, nowMs int64) error {
	if record && replicaID >= 0 {
		q := r.core.Quiet()
		q.Followers, _ = r.core.Followers(nil)
		if _, ok := rcore.QuietAdmits(q, fp, replicaID); ok {
			r.quietFetchMs[replicaID] = nowMs
			return nil
		}
	}
	rd, err := r.core.Admit(fp, replicaID, record, nowMs, r.p.isEligibleReplica)
	r.ready(rd)
	return err
}

// Bounds is replica.Source.Bounds.
func (r *replica) Bounds() (hw, lso, logStart int64) {
	return r.core.HighWatermark(), r.core.LastStableOffset(), r.log.LogStartOffset()
}

// Read is replica.Source.Read.
func (r *replica) Read(offset int64, maxBytes int, minOneBatch bool, mode rcore.ReadMode) (api.FetchResult, error) {
	return r.core.Read(offset, maxBytes, minOneBatch, mode)
}

// Divergence is replica.Source.Divergence (KIP-595's DivergingEpoch).
func (r *replica) Divergence(fp api.FetchPartition) *api.EpochEnd {
	return rcore.DivergenceOf(r.log, fp)
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// The simulated cluster has combined nodes only, so no broker-only node
// ever fetches the metadata log.
func (x backend) FetchMetadataLog(_ *kmsg.FetchRequest, respond api.Respond) {
	respond(nil)
}

func (x backend) FetchMetadataSnapshot(*kmsg.FetchSnapshotRequest) *kmsg.FetchSnapshotResponse {
	resp := kmsg.NewPtrFetchSnapshotResponse()
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	return resp
}
