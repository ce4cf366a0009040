package api

// Fetch: versions 4-16. v4 is the floor for v2 record batches. We never
// create incremental fetch sessions (v7+): every answer carries session id
// 0, which tells clients to keep sending full requests. v13+ names topics by
// id. v15 moves the replica id into ReplicaState.
//
// Consumers read only below the high watermark. Long polls wait inside the
// backend on partition events, never with a goroutine per request.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/config"
)

func init() {
	register(Spec{Key: 1, MinVersion: 4, MaxVersion: 16, Handle: handleFetch, ForControllers: true})
}

// maxFetchWait bounds a long poll whatever the client asks for.
const maxFetchWait = 30 * time.Second

// maxFetchResponseBytes bounds a response whatever the client asks for.
const maxFetchResponseBytes = 64 << 20

func handleFetch(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if req.Version >= 7 && req.SessionID != 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		respond(resp)
		return
	}
	replicaID := req.ReplicaID
	if req.Version >= 15 {
		replicaID = req.ReplicaState.ID
	}
	if req.ClusterID != nil && *req.ClusterID != s.Backend.Image().ClusterID() {
		// A replica of another cluster must never copy this log.
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		respond(resp)
		return
	}
	if r.ControllerListener && IsMetadataLogFetch(req) {
		s.Backend.FetchMetadataLog(req, respond)
		return
	}
	if !s.Backend.Config().HasRole(config.RoleBroker) {
		// A controller-only node hosts no partitions.
		resp.ErrorCode = kerr.UnknownServerError.Code
		respond(resp)
		return
	}
	params := FetchParams{
		ReplicaID: replicaID,
		MaxWait:   clampDuration(time.Duration(req.MaxWaitMillis)*time.Millisecond, 0, maxFetchWait),
		MinBytes:  req.MinBytes,
		MaxBytes:  req.MaxBytes,
	}
	if params.MaxBytes <= 0 || params.MaxBytes > maxFetchResponseBytes {
		params.MaxBytes = maxFetchResponseBytes
	}

	im := s.Backend.Image()
	byID := req.Version >= 13
	// slots maps each backend partition back to its place in the response;
	// partitions that fail lookup are answered here and not sent on.
	type slot struct{ ti, pi int }
	var slots []slot
	resp.Topics = make([]kmsg.FetchResponseTopic, len(req.Topics))
	for ti, rt := range req.Topics {
		st := &resp.Topics[ti]
		*st = kmsg.NewFetchResponseTopic()
		st.Topic = rt.Topic
		st.TopicID = rt.TopicID
		st.Partitions = make([]kmsg.FetchResponseTopicPartition, len(rt.Partitions))
		t, terr := lookupTopic(im, byID, rt.Topic, rt.TopicID)
		for pi, rp := range rt.Partitions {
			sp := &st.Partitions[pi]
			*sp = kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark = -1
			sp.LastStableOffset = -1
			sp.LogStartOffset = -1
			sp.PreferredReadReplica = -1
			sp.RecordBatches = []byte{}
			if terr != nil {
				sp.ErrorCode = ErrorCode(terr)
				continue
			}
			maxBytes := rp.PartitionMaxBytes
			if maxBytes <= 0 {
				maxBytes = params.MaxBytes
			}
			params.Partitions = append(params.Partitions, FetchPartition{
				Topic: t.ID, Partition: rp.Partition, Offset: rp.FetchOffset,
				MaxBytes: maxBytes, CurrentLeaderEpoch: currentLeaderEpoch(req.Version, rp.CurrentLeaderEpoch),
				LastFetchedEpoch: lastFetchedEpoch(req.Version, rp.LastFetchedEpoch),
			})
			slots = append(slots, slot{ti, pi})
		}
	}
	if len(params.Partitions) == 0 {
		respond(resp)
		return
	}
	s.Backend.Fetch(params, func(results []FetchResult) {
		for i, res := range results {
			sp := &resp.Topics[slots[i].ti].Partitions[slots[i].pi]
			sp.ErrorCode = ErrorCode(res.Err)
			sp.HighWatermark = res.HighWatermark
			sp.LastStableOffset = res.HighWatermark
			sp.LogStartOffset = res.LogStartOffset
			sp.RecordBatches = res.Records
			if res.Diverging != nil {
				sp.DivergingEpoch.Epoch = res.Diverging.Epoch
				sp.DivergingEpoch.EndOffset = res.Diverging.EndOffset
			}
			if sp.RecordBatches == nil {
				// Never null: librdkafka rejects a -1 record set size.
				sp.RecordBatches = []byte{}
			}
		}
		addFetchLeaderHints(s, r, req, resp)
		respond(resp)
	})
}

func currentLeaderEpoch(version int16, epoch int32) int32 {
	if version < 9 {
		return -1
	}
	return epoch
}

func lastFetchedEpoch(version int16, epoch int32) int32 {
	if version < 12 {
		return -1
	}
	return epoch
}

func clampDuration(d, lo, hi time.Duration) time.Duration {
	if d < lo {
		return lo
	}
	if d > hi {
		return hi
	}
	return d
}
