package node

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/quorum"
)

// The controller's side of broker-only nodes following the metadata log
// (KIP-595's observers): a Fetch of __cluster_metadata returns committed
// entries as record batches at offset index-1, with the committed index
// as high watermark and the quorum leader and term as CurrentLeader; an
// offset behind the log's start answers with the snapshot to load
// instead (SnapshotID), served by FetchSnapshot in chunks.

// Limits of metadata log reads.
const (
	maxMetadataFetchWait  = 5 * time.Second
	maxMetadataFetchBytes = 8 << 20
	maxSnapshotChunkBytes = 4 << 20
)

// FetchMetadataLog answers at once when there is something to send,
// else waits (on its own goroutine) for the next applied entry.
func (b *Broker) fetchMetadataLog(req *kmsg.FetchRequest, respond api.Respond) {
	rp := req.Topics[0].Partitions[0]
	if b.quorum == nil || rp.FetchOffset < 0 {
		respond(metadataFetchError(req, kerr.NotController))
		return
	}
	maxBytes := uint64(maxMetadataFetchBytes)
	if rp.PartitionMaxBytes > 0 {
		maxBytes = min(maxBytes, uint64(rp.PartitionMaxBytes))
	}
	from := uint64(rp.FetchOffset) + 1
	b.metadataObservers.note(req.ReplicaID, rp.FetchOffset, int64(b.quorum.AppliedIndex()), time.Now())
	changed := b.quorum.AppliedChanged()
	read, err := b.quorum.ReadCommitted(from, maxBytes)
	if err != nil || len(read.Entries) > 0 || read.Compacted || req.MaxWaitMillis <= 0 {
		respond(b.metadataFetchAnswer(req, read, err))
		return
	}
	wait := min(time.Duration(req.MaxWaitMillis)*time.Millisecond, maxMetadataFetchWait)
	go func() {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		for {
			expired := false
			select {
			case <-changed:
			case <-timer.C:
				expired = true
			case <-b.stop:
				expired = true
			}
			changed = b.quorum.AppliedChanged()
			read, err := b.quorum.ReadCommitted(from, maxBytes)
			if err != nil || len(read.Entries) > 0 || read.Compacted || expired {
				respond(b.metadataFetchAnswer(req, read, err))
				return
			}
		}
	}()
}

func (b *Broker) metadataFetchAnswer(req *kmsg.FetchRequest, read quorum.ObserverRead, err error) kmsg.Response {
	if err != nil {
		b.log.Warn("reading the metadata log for a broker failed", "err", err)
		return metadataFetchError(req, kerr.UnknownServerError)
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic, rt.TopicID = req.Topics[0].Topic, req.Topics[0].TopicID
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.HighWatermark = int64(read.Committed)
	rp.LastStableOffset = rp.HighWatermark
	rp.LogStartOffset = int64(read.Snapshot.Index)
	rp.PreferredReadReplica = -1
	rp.CurrentLeader.LeaderID = b.quorum.Leader()
	rp.CurrentLeader.LeaderEpoch = int32(b.quorum.Term())
	if read.Compacted {
		rp.SnapshotID.EndOffset = int64(read.Snapshot.Index)
		rp.SnapshotID.Epoch = int32(read.Snapshot.Term)
	}
	rp.RecordBatches, err = quorum.EncodeEntryBatches(nil, read.Entries)
	if err != nil {
		b.log.Warn("encoding the metadata log for a broker failed", "err", err)
		return metadataFetchError(req, kerr.UnknownServerError)
	}
	rt.Partitions = []kmsg.FetchResponseTopicPartition{rp}
	resp.Topics = []kmsg.FetchResponseTopic{rt}
	return resp
}

func metadataFetchError(req *kmsg.FetchRequest, err *kerr.Error) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.ErrorCode = err.Code
	return resp
}

// fetchMetadataSnapshot serves one chunk of the latest snapshot. A
// request for another snapshot (a newer one was taken meanwhile) gets
// SNAPSHOT_NOT_FOUND and the broker starts over from a Fetch.
func (b *Broker) fetchMetadataSnapshot(req *kmsg.FetchSnapshotRequest) *kmsg.FetchSnapshotResponse {
	resp := req.ResponseKind().(*kmsg.FetchSnapshotResponse)
	rq := req.Topics[0].Partitions[0]
	rp := kmsg.NewFetchSnapshotResponseTopicPartition()
	rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch = rq.SnapshotID.EndOffset, rq.SnapshotID.Epoch
	resp.Topics = []kmsg.FetchSnapshotResponseTopic{{Topic: api.MetadataLogTopic, Partitions: []kmsg.FetchSnapshotResponseTopicPartition{rp}}}
	p := &resp.Topics[0].Partitions[0]
	if b.quorum == nil {
		p.ErrorCode = kerr.NotController.Code
		return resp
	}
	p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = b.quorum.Leader(), int32(b.quorum.Term())
	info, data, err := b.quorum.LatestSnapshot()
	switch {
	case err != nil:
		b.log.Warn("reading the metadata snapshot for a broker failed", "err", err)
		p.ErrorCode = kerr.UnknownServerError.Code
		return resp
	case info.Index == 0 || int64(info.Index) != rq.SnapshotID.EndOffset || int32(info.Term) != rq.SnapshotID.Epoch:
		p.ErrorCode = kerr.SnapshotNotFound.Code
		return resp
	case rq.Position < 0 || rq.Position > int64(len(data)):
		p.ErrorCode = kerr.PositionOutOfRange.Code
		return resp
	}
	n := int64(maxSnapshotChunkBytes)
	if req.MaxBytes > 0 {
		n = min(n, int64(req.MaxBytes))
	}
	end := min(int64(len(data)), rq.Position+n)
	p.Size, p.Position = int64(len(data)), rq.Position
	p.Bytes = data[rq.Position:end]
	return resp
}
