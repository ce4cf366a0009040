package api

// FetchSnapshot: versions 0-1, on controller listeners only (KIP-630). A
// broker-only node whose next metadata entry was compacted away loads the
// controller's latest snapshot of the metadata log, chunk by chunk.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 59, MinVersion: 0, MaxVersion: 1, Handle: handleFetchSnapshot, ControllerOnly: true})
}

// MetadataLogTopic and MetadataLogTopicID name the metadata log as KRaft
// does (its topic id is the fixed Uuid 0...01).
const MetadataLogTopic = "__cluster_metadata"

// MetadataLogTopicID is __cluster_metadata's fixed topic id.
var MetadataLogTopicID = [16]byte{15: 1}

// IsMetadataLogFetch reports whether a Fetch reads the metadata log (one
// topic, partition 0), which only controllers serve, to broker-only nodes.
func IsMetadataLogFetch(req *kmsg.FetchRequest) bool {
	if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
		return false
	}
	if req.Version >= 13 {
		return req.Topics[0].TopicID == MetadataLogTopicID
	}
	return req.Topics[0].Topic == MetadataLogTopic
}

func handleFetchSnapshot(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.FetchSnapshotRequest)
	if req.ClusterID != nil && *req.ClusterID != s.Backend.Image().ClusterID() {
		resp := req.ResponseKind().(*kmsg.FetchSnapshotResponse)
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		respond(resp)
		return
	}
	if len(req.Topics) != 1 || req.Topics[0].Topic != MetadataLogTopic ||
		len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
		resp := req.ResponseKind().(*kmsg.FetchSnapshotResponse)
		resp.ErrorCode = kerr.InvalidRequest.Code
		respond(resp)
		return
	}
	respond(s.Backend.FetchMetadataSnapshot(req))
}
