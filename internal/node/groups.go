package node

import (
	"math"
	"strconv"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/grouphost"
)

// groupRuntime runs one group.Coordinator for every __consumer_offsets
// partition this broker leads (coordinatorSet): a stopped one answers its
// parked requests NOT_COORDINATOR.
type groupRuntime struct {
	coordinatorSet[*groupCoordinator]
	cfg          group.Config
	offsetsTopic *internalTopic
}

func newGroupRuntime(b *Broker) *groupRuntime {
	rt := &groupRuntime{cfg: groupConfig(b.cfg)}
	rt.coordinatorSet = newCoordinatorSet(b, api.OffsetsTopic, func(p *partition, epoch int32) *groupCoordinator {
		return newGroupCoordinator(rt, p, epoch)
	})
	rt.offsetsTopic = &internalTopic{b: b, name: api.OffsetsTopic, request: rt.offsetsTopicRequest}
	return rt
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

var _ grouphost.Hosts = (*groupRuntime)(nil)

// For is grouphost.Hosts': the coordinator of a group on this broker.
func (rt *groupRuntime) For(groupID string) (grouphost.Handle, error) {
	gc, err := rt.lookup(groupID)
	if err != nil {
		return nil, err
	}
	return gc, nil
}

// ForPartition is grouphost.Hosts': the coordinator of a partition here.
func (rt *groupRuntime) ForPartition(partition int32) (grouphost.Handle, bool) {
	gc, ok := rt.byPartition(partition)
	if !ok {
		return nil, false
	}
	return gc, true
}

// All is grouphost.Hosts': the coordinators on this broker.
func (rt *groupRuntime) All() ([]grouphost.Handle, error) {
	var out []grouphost.Handle
	for _, gc := range rt.all() {
		out = append(out, gc)
	}
	return out, nil
}

// offsetsTopicRequest is the creation of __consumer_offsets: the broker's
// offsets.topic.* properties, compacted like Kafka's (the log cleaner keeps
// the latest record of every group and committed offset, so a new
// coordinator replays little). Retention must never delete its segments,
// as in Kafka: a deleted segment would lose committed offsets that no later
// record repeats.
func (rt *groupRuntime) offsetsTopicRequest() (partitions int32, replicationFactor int16, configs map[string]string) {
	rf := rt.b.internalReplicationFactor("offsets.topic.replication.factor", rt.b.cfg.OffsetsTopicReplicationFactor)
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
