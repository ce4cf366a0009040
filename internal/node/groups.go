package node

import (
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/grouphost"
)

// groupRuntime runs one group.Coordinator for every __consumer_offsets
// partition this broker leads. It follows leadership after every metadata
// reconcile: a partition newly led here gets a coordinator that first loads
// the partition's log; one led elsewhere now is unloaded (its parked
// requests answered NOT_COORDINATOR) and dropped.
//
// Locking: reconcileMu makes reconciles one at a time, so a reconcile
// working from an older view of leadership never undoes a newer one.
// groupRuntime.mu guards the coordinator map and the topic creation
// waiters; it is never held while a coordinator's lock is taken for a
// call, nor the other way round.
type groupRuntime struct {
	b   *Broker
	cfg group.Config

	reconcileMu sync.Mutex

	mu      sync.Mutex
	coords  map[int32]*groupCoordinator // by partition index
	stopped bool
	// createWaiters wait for the one creation of __consumer_offsets in
	// flight (nil when none is).
	createWaiters []func(error)
}

func newGroupRuntime(b *Broker) *groupRuntime {
	return &groupRuntime{b: b, cfg: groupConfig(b.cfg), coords: map[int32]*groupCoordinator{}}
}

// groupConfig maps broker properties onto the coordinator's config.
// group.max.size keeps the coordinator's own cap when the property is at
// Kafka's unbounded default.
func groupConfig(cfg *config.Broker) group.Config {
	gc := group.DefaultConfig()
	gc.InitialRebalanceDelayMs = cfg.GroupInitialRebalanceDelay.Milliseconds()
	gc.MinSessionTimeoutMs = cfg.GroupMinSessionTimeout.Milliseconds()
	gc.MaxSessionTimeoutMs = cfg.GroupMaxSessionTimeout.Milliseconds()
	if cfg.GroupMaxSize > 0 && cfg.GroupMaxSize < math.MaxInt32 {
		gc.MaxSize = int(cfg.GroupMaxSize)
	}
	gc.OffsetsRetentionMs = cfg.OffsetsRetention.Milliseconds()
	gc.MaxOffsetMetadataBytes = int(cfg.OffsetMetadataMaxBytes)
	return gc
}

// reconcile starts coordinators for the __consumer_offsets partitions this
// broker now leads and stops the others. Called after every partition
// reconcile, and after a coordinator failed.
func (rt *groupRuntime) reconcile() {
	rt.reconcileMu.Lock()
	defer rt.reconcileMu.Unlock()
	type led struct {
		p     *partition
		epoch int32
	}
	want := map[int32]led{}
	if t, ok := rt.b.Image().Topic(api.OffsetsTopic); ok {
		for _, pm := range t.Partitions {
			p := rt.b.partition(t.ID, pm.Index)
			if p == nil {
				continue
			}
			leading, epoch := p.leadership()
			if leading {
				want[pm.Index] = led{p, epoch}
			}
		}
	}
	var stale, started []*groupCoordinator
	rt.mu.Lock()
	if rt.stopped {
		rt.mu.Unlock()
		return
	}
	for idx, gc := range rt.coords {
		if w, ok := want[idx]; ok && w.p == gc.part && w.epoch == gc.epoch && !gc.isStopped() {
			continue
		}
		delete(rt.coords, idx)
		stale = append(stale, gc)
	}
	for idx, w := range want {
		if _, ok := rt.coords[idx]; ok {
			continue
		}
		gc := newGroupCoordinator(rt, w.p, w.epoch)
		rt.coords[idx] = gc
		started = append(started, gc)
	}
	rt.mu.Unlock()
	for _, gc := range stale {
		gc.stop("leadership moved")
	}
	for _, gc := range started {
		go gc.load()
	}
}

// stopAll unloads every coordinator: the broker is stopping.
func (rt *groupRuntime) stopAll() {
	rt.mu.Lock()
	rt.stopped = true
	coords := rt.coords
	rt.coords = map[int32]*groupCoordinator{}
	rt.mu.Unlock()
	for _, gc := range coords {
		gc.stop("broker stopping")
	}
}

var _ grouphost.Hosts = (*groupRuntime)(nil)

// For is grouphost.Hosts': the coordinator of a group on this broker.
func (rt *groupRuntime) For(groupID string) (grouphost.Handle, error) {
	t, ok := rt.b.Image().Topic(api.OffsetsTopic)
	if !ok || len(t.Partitions) == 0 {
		return nil, kerr.NotCoordinator
	}
	idx := group.PartitionFor(groupID, int32(len(t.Partitions)))
	rt.mu.Lock()
	gc := rt.coords[idx]
	rt.mu.Unlock()
	if gc != nil && gc.part.id == t.ID {
		return gc, nil
	}
	if t.Partitions[idx].Leader == rt.b.cfg.NodeID {
		// The image says we lead it; the reconcile that starts the
		// coordinator has not run yet.
		return nil, kerr.CoordinatorLoadInProgress
	}
	return nil, kerr.NotCoordinator
}

// All is grouphost.Hosts': the coordinators on this broker (those still
// loading answer COORDINATOR_LOAD_IN_PROGRESS themselves).
func (rt *groupRuntime) All() ([]grouphost.Handle, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := make([]grouphost.Handle, 0, len(rt.coords))
	for _, gc := range rt.coords {
		out = append(out, gc)
	}
	return out, nil
}

// replaceFailed drops a coordinator whose write failed and reloads the
// partition if this broker still leads it.
func (rt *groupRuntime) replaceFailed(gc *groupCoordinator) {
	rt.mu.Lock()
	if rt.coords[gc.part.index] == gc {
		delete(rt.coords, gc.part.index)
	}
	rt.mu.Unlock()
	rt.reconcile()
}

// offsetsTopicRequest is the creation of __consumer_offsets: the broker's
// offsets.topic.* properties, compacted like Kafka's (the log cleaner keeps
// the latest record of every group and committed offset, so a new
// coordinator replays little). Retention must never delete its segments,
// as in Kafka: a deleted segment would lose committed offsets that no later
// record repeats.
func (rt *groupRuntime) offsetsTopicRequest() (partitions int32, replicationFactor int16, configs map[string]string) {
	rf := rt.b.cfg.OffsetsTopicReplicationFactor
	// In a cluster of combined nodes every broker is a voter, so there can
	// never be more brokers than voters: a larger factor could never be met
	// (the Kafka default of 3 on a single broker would keep groups
	// unavailable forever). With dedicated controllers (this node is a
	// broker only) the broker count is open, so Kafka's rule stands: wait
	// until enough brokers are alive.
	combined := rt.b.cfg.HasRole(config.RoleController)
	if n := len(rt.b.controllerVoters()); combined && n > 0 && int(rf) > n {
		rt.b.log.Warn("offsets.topic.replication.factor exceeds the number of nodes; using the node count",
			"configured", rf, "nodes", n)
		rf = int16(n)
	}
	return rt.b.cfg.OffsetsTopicNumPartitions, rf, map[string]string{
		"cleanup.policy":  "compact",
		"retention.ms":    "-1",
		"retention.bytes": "-1",
		"segment.bytes":   strconv.Itoa(int(rt.b.cfg.OffsetsTopicSegmentBytes)),
	}
}

// groupWriteTimeout bounds the wait for a coordinator's records to be
// committed (Kafka's offsets.commit.timeout.ms default).
const groupWriteTimeout = 5 * time.Second
