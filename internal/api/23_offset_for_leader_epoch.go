package api

// OffsetForLeaderEpoch: versions 0-4. For a leader epoch, the leader
// answers the end offset of that epoch in its log (KIP-101): the start of
// the next higher epoch, or its log end for the current one. Followers use
// it to truncate a divergent tail; consumers (KIP-320) to detect that the
// log they read was truncated. v2+ carries the caller's view of the current
// leader epoch, fenced as in Fetch.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
)

func init() {
	register(Spec{Key: 23, MinVersion: 0, MaxVersion: 4, Handle: handleOffsetForLeaderEpoch})
}

func handleOffsetForLeaderEpoch(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	im := s.Backend.Image()
	// A replica's request (v3+) needs CLUSTER_ACTION, as a follower fetch.
	replicaAllowed := req.Version < 3 || req.ReplicaID < 0 || s.allowedCluster(r, authz.OpClusterAction)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		t, terr := s.lookupAuthorized(r, authz.OpDescribe, im, false, rt.Topic, [16]byte{})
		if req.Version >= 3 && req.ReplicaID >= 0 && !replicaAllowed {
			t, terr = nil, kerr.ClusterAuthorizationFailed
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch = -1
			sp.EndOffset = -1
			if terr != nil {
				sp.ErrorCode = ErrorCode(terr)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			current := int32(-1)
			if req.Version >= 2 {
				current = rp.CurrentLeaderEpoch
			}
			epoch, end, err := s.Backend.EpochEndOffset(t.ID, rp.Partition, current, rp.LeaderEpoch)
			if err != nil {
				sp.ErrorCode = ErrorCode(err)
			} else {
				sp.LeaderEpoch = epoch
				sp.EndOffset = end
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	respond(resp)
}
