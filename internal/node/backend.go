package node

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/ctrlcore"
	"github.com/skein-log/skein/internal/loglevel"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/replica"
)

// backend adapts the Broker to api.Backend.
type backend struct{ b *Broker }

var _ api.Backend = backend{}

func (x backend) NodeID() int32                    { return x.b.cfg.NodeID }
func (x backend) Config() *config.Broker           { return x.b.cfg }
func (x backend) Loggers() *loglevel.Levels        { return x.b.levels }
func (x backend) Image() *metadata.Image           { return x.b.Image() }
func (x backend) Commit(r []metadata.Record) error { return x.b.commit(r) }
func (x backend) Reassign(reqs []controller.Reassignment, allowRFChange bool) ([]error, error) {
	return x.b.reassign(reqs, allowRFChange)
}
func (x backend) UnregisterBroker(id int32) error { return x.b.unregisterBroker(id) }
func (x backend) NewTopicID() metadata.TopicID    { return newTopicID() }
func (x backend) AllocateProducerID() (int64, error) {
	return x.b.allocateProducerID()
}

func (x backend) IsActiveController() bool { return x.b.isActiveController() }

func (x backend) ActiveControllerID() int32 { return x.b.controllerID.Load() }

func (x backend) LeaderSuspect(id int32) bool { return x.b.isSuspect(id) }

func (x backend) SettleSuspects() { x.b.settleSuspects() }

func (x backend) FencedAtMs(id int32) (int64, bool) { return x.b.fencedAtMs(id) }
func (x backend) NowMs() int64                      { return time.Now().UnixMilli() }

func (x backend) Forward(r *api.Request, respond api.Respond) { x.b.forward(r, respond) }

func (x backend) Controller() api.ControllerBackend { return ctrlcore.Backend{R: x.b.controllerSvc} }

func (x backend) Quorum() api.QuorumBackend { return quorumAdmin(x) }

func (x backend) FetchSessions() api.FetchSessions { return x.b.fetchSessions }

func (x backend) DescribeLogDirs() []api.LogDirDescription { return x.b.describeLogDirs() }
func (x backend) AlterReplicaLogDir(topic string, partition int32, dir string) error {
	return x.b.alterReplicaLogDir(topic, partition, dir)
}

func (x backend) DescribeProducers(topic metadata.TopicID, index int32) ([]api.ProducerState, error) {
	p := x.b.partition(topic, index)
	if p == nil {
		return nil, x.b.partitionError(topic, index)
	}
	return p.describeProducers()
}

func (x backend) TopicConfig(t *metadata.Topic) (config.TopicConfig, error) {
	return x.b.topicConfig(t)
}

func (x backend) Produce(req api.ProduceParams, done func(api.ProduceResult)) {
	p := x.b.partition(req.Topic, req.Partition)
	if p == nil {
		done(api.ProduceResult{Err: x.b.partitionError(req.Topic, req.Partition), BaseOffset: -1, LogAppendTime: -1})
		return
	}
	if p.topic == api.OffsetsTopic {
		// Only the group coordinator writes there, as in Kafka: a client's
		// record could corrupt group state or slip in while it loads.
		done(api.ProduceResult{Err: fmt.Errorf("%w: clients cannot write to the internal topic %s", kerr.InvalidTopicException, p.topic), BaseOffset: -1, LogAppendTime: -1})
		return
	}
	var n int64
	for _, b := range req.Batches {
		n += int64(len(b))
	}
	if err := x.b.checkFreeSpace(p.logDir, n); err != nil {
		done(api.ProduceResult{Err: err, BaseOffset: -1, LogAppendTime: -1})
		return
	}
	p.produce(req, done)
}

func (x backend) Fetch(req api.FetchParams, done func([]api.FetchResult)) {
	x.b.fetch(req, done)
}

func (x backend) ListOffset(id metadata.TopicID, index int32, ts int64, isolation int8) (api.OffsetResult, error) {
	p := x.b.partition(id, index)
	if p == nil || !p.isLeader() {
		return api.OffsetResult{}, x.b.partitionError(id, index)
	}
	_, epoch := p.leadership()
	bound := p.highWatermark.Load()
	if isolation == api.ReadCommitted {
		bound = p.lastStable.Load()
	}
	return replica.ListOffset(p.log, ts, bound, epoch)
}

// WriteTxnMarker is api.Backend's: the marker goes through the partition's
// replica core (replica.WriteTxnMarker), __consumer_offsets included.
func (x backend) WriteTxnMarker(req api.TxnMarkerParams, done func(error)) {
	p := x.b.partition(req.Topic, req.Partition)
	if p == nil {
		done(x.b.partitionError(req.Topic, req.Partition))
		return
	}
	p.writeTxnMarker(req, func(res api.ProduceResult) { done(res.Err) })
}

func (x backend) EpochEndOffset(id metadata.TopicID, index int32, current, requested int32) (int32, int64, error) {
	p := x.b.partition(id, index)
	if p == nil || !p.isLeader() {
		return -1, -1, x.b.partitionError(id, index)
	}
	if err := p.checkLeaderEpoch(current); err != nil {
		return -1, -1, err
	}
	epoch, end := p.log.Epochs().EndOffsetFor(requested, p.log.LogEndOffset())
	return epoch, end, nil
}

func (x backend) FetchMetadataLog(req *kmsg.FetchRequest, respond api.Respond) {
	x.b.fetchMetadataLog(req, respond)
}

func (x backend) FetchMetadataSnapshot(req *kmsg.FetchSnapshotRequest) *kmsg.FetchSnapshotResponse {
	return x.b.fetchMetadataSnapshot(req)
}
