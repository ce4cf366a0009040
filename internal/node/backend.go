package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/ctrlcore"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/records"
)

// backend adapts the Broker to api.Backend.
type backend struct{ b *Broker }

var _ api.Backend = backend{}

func (x backend) NodeID() int32                    { return x.b.cfg.NodeID }
func (x backend) Config() *config.Broker           { return x.b.cfg }
func (x backend) Image() *metadata.Image           { return x.b.Image() }
func (x backend) Commit(r []metadata.Record) error { return x.b.commit(r) }
func (x backend) NewTopicID() metadata.TopicID     { return newTopicID() }
func (x backend) AllocateProducerID() (int64, error) {
	return x.b.allocateProducerID()
}

func (x backend) IsActiveController() bool { return x.b.isActiveController() }

func (x backend) ActiveControllerID() int32 { return x.b.controllerID.Load() }

func (x backend) LeaderSuspect(id int32) bool { return x.b.isSuspect(id) }

func (x backend) SettleSuspects() { x.b.settleSuspects() }
func (x backend) NowMs() int64    { return time.Now().UnixMilli() }

func (x backend) Forward(r *api.Request, respond api.Respond) { x.b.forward(r, respond) }

func (x backend) Controller() api.ControllerBackend { return ctrlcore.Backend{R: x.b.controllerSvc} }

func (x backend) FetchSessions() api.FetchSessions { return x.b.fetchSessions }

func (x backend) DescribeLogDirs() []api.LogDirDescription { return x.b.describeLogDirs() }

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
	x.b.awaitOpening(1, func(int) partKey { return partKey{req.Topic, req.Partition} })
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
	if err := x.b.checkFreeSpace(partitionLogDir(p)); err != nil {
		done(api.ProduceResult{Err: err, BaseOffset: -1, LogAppendTime: -1})
		return
	}
	p.produce(req, done)
}

func (x backend) Fetch(req api.FetchParams, done func([]api.FetchResult)) {
	x.b.awaitOpening(len(req.Partitions), func(i int) partKey {
		return partKey{req.Partitions[i].Topic, req.Partitions[i].Partition}
	})
	x.b.fetch(req, done)
}

// maxTimestampLookupBytes bounds the decompressed size of a batch opened to
// find a record by timestamp.
const maxTimestampLookupBytes = 64 << 20

func (x backend) ListOffset(id metadata.TopicID, index int32, ts int64) (api.OffsetResult, error) {
	p := x.b.partition(id, index)
	if p == nil || !p.isLeader() {
		return api.OffsetResult{}, x.b.partitionError(id, index)
	}
	_, epoch := p.leadership()
	hw := p.highWatermark.Load()
	switch ts {
	case -1: // latest: what a consumer can read up to
		return api.OffsetResult{Offset: hw, Timestamp: -1, LeaderEpoch: epoch}, nil
	case -2: // earliest
		return api.OffsetResult{Offset: p.log.LogStartOffset(), Timestamp: -1, LeaderEpoch: epoch}, nil
	case -3: // the record with the largest timestamp
		maxTs, off := p.log.MaxTimestamp()
		if off < 0 || off >= hw {
			return api.OffsetResult{Offset: -1, Timestamp: -1, LeaderEpoch: -1}, nil
		}
		return api.OffsetResult{Offset: off, Timestamp: maxTs, LeaderEpoch: epoch}, nil
	}
	if ts < 0 {
		return api.OffsetResult{}, fmt.Errorf("%w: timestamp %d", kerr.InvalidRequest, ts)
	}
	return x.offsetForTimestamp(p, ts, hw, epoch)
}

// offsetForTimestamp finds the first record whose timestamp is at or after
// ts, opening the candidate batches to look at each record.
func (x backend) offsetForTimestamp(p *partition, ts, hw int64, epoch int32) (api.OffsetResult, error) {
	none := api.OffsetResult{Offset: -1, Timestamp: -1, LeaderEpoch: -1}
	base, _, found, err := p.log.OffsetForTimestamp(ts)
	if err != nil {
		return none, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	for found && base < hw {
		data, err := p.log.Read(base, 1, hw, true)
		if err != nil || len(data) == 0 {
			return none, nil
		}
		var result *api.OffsetResult
		err = batch.Split(data, func(b []byte) error {
			h, recs, err := records.Decode(b, maxTimestampLookupBytes)
			if err != nil {
				return err
			}
			base = h.LastOffset() + 1
			for _, r := range recs {
				rts := h.BaseTimestamp + r.TimestampDelta
				if h.Attributes&batch.TimestampTypeBit != 0 {
					rts = h.MaxTimestamp
				}
				if rts >= ts {
					result = &api.OffsetResult{Offset: h.BaseOffset + int64(r.OffsetDelta), Timestamp: rts, LeaderEpoch: epoch}
					return errStopScan
				}
			}
			return nil
		})
		if result != nil {
			return *result, nil
		}
		if err != nil {
			return none, fmt.Errorf("%w: %v", kerr.CorruptMessage, err)
		}
	}
	return none, nil
}

var errStopScan = errors.New("stop")

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
