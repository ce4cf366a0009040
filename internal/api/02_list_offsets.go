package api

// ListOffsets: versions 1-7. Timestamps -1 (latest: the high watermark),
// -2 (earliest: the log start offset), -3 (v7+: the record with the largest
// timestamp), or a real timestamp (the first record at or after it).
// v2+ carries the isolation level: read_committed (1) answers latest with
// the last stable offset and looks no further than it, as Kafka does.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
)

func init() {
	register(Spec{Key: 2, MinVersion: 1, MaxVersion: 7, Handle: handleListOffsets})
}

func handleListOffsets(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	im := s.Backend.Image()
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		t, terr := s.lookupAuthorized(r, authz.OpDescribe, im, false, rt.Topic, [16]byte{})
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp = -1
			sp.Offset = -1
			sp.LeaderEpoch = -1
			if terr != nil {
				sp.ErrorCode = ErrorCode(terr)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			isolation := ReadUncommitted
			if req.Version >= 2 {
				isolation = req.IsolationLevel
			}
			if isolation != ReadUncommitted && isolation != ReadCommitted {
				sp.ErrorCode = kerr.InvalidRequest.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			res, err := s.Backend.ListOffset(t.ID, rp.Partition, rp.Timestamp, isolation)
			if err != nil {
				sp.ErrorCode = ErrorCode(err)
			} else {
				sp.Offset = res.Offset
				sp.Timestamp = res.Timestamp
				sp.LeaderEpoch = res.LeaderEpoch
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	respond(resp)
}
