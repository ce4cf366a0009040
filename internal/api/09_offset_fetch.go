package api

// OffsetFetch: versions 1-8. v2+ fetches every committed offset of the
// group when the topic list is null and answers a top-level error; v5+
// returns the leader epoch; v7 asks for stable offsets, which all are
// here (no transactions); v8 fetches for several groups at once, each
// answered on its own. A partition without a committed offset answers
// offset -1.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/group"
)

func init() {
	register(Spec{Key: 9, MinVersion: 1, MaxVersion: 8, Handle: handleOffsetFetch})
}

// maxFetchGroups bounds the groups of one v8 request.
const maxFetchGroups = 10_000

func handleOffsetFetch(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if r.Version < 8 {
		var parts []group.TopicPartition
		if req.Topics != nil || r.Version < 2 {
			parts = []group.TopicPartition{}
			for _, t := range req.Topics {
				for _, p := range t.Partitions {
					parts = append(parts, group.TopicPartition{Topic: t.Topic, Partition: p})
				}
			}
		}
		fetched, err := s.fetchOffsets(req.Group, parts)
		if err != nil {
			resp.ErrorCode = ErrorCode(err)
			if r.Version < 2 {
				// v1 has no top-level error: every partition carries it.
				fetched = unfetched(parts, err)
			}
		}
		for _, f := range groupByTopic(fetched) {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = f[0].Topic
			for _, o := range f {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = o.Partition, o.Offset, o.LeaderEpoch, kmsg.StringPtr(o.Metadata)
				rp.ErrorCode = ErrorCode(o.err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		respond(resp)
		return
	}
	for i, g := range req.Groups {
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = g.Group
		if i >= maxFetchGroups {
			rg.ErrorCode = kerr.InvalidRequest.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		var parts []group.TopicPartition
		if g.Topics != nil {
			parts = []group.TopicPartition{}
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					parts = append(parts, group.TopicPartition{Topic: t.Topic, Partition: p})
				}
			}
		}
		fetched, err := s.fetchOffsets(g.Group, parts)
		rg.ErrorCode = ErrorCode(err)
		for _, f := range groupByTopic(fetched) {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = f[0].Topic
			for _, o := range f {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = o.Partition, o.Offset, o.LeaderEpoch, kmsg.StringPtr(o.Metadata)
				rp.ErrorCode = ErrorCode(o.err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	respond(resp)
}

// fetchedOffset is a fetched offset with its partition's own error.
type fetchedOffset struct {
	group.FetchedOffset
	err error
}

func (s *Server) fetchOffsets(groupID string, parts []group.TopicPartition) ([]fetchedOffset, error) {
	if groupID == "" {
		return nil, kerr.InvalidGroupID
	}
	fetched, err := s.Backend.Groups().FetchOffsets(groupID, parts)
	if err != nil {
		return nil, err
	}
	out := make([]fetchedOffset, len(fetched))
	for i, f := range fetched {
		out[i].FetchedOffset = f
	}
	return out, nil
}

func unfetched(parts []group.TopicPartition, err error) []fetchedOffset {
	out := make([]fetchedOffset, len(parts))
	for i, p := range parts {
		out[i] = fetchedOffset{FetchedOffset: group.FetchedOffset{Topic: p.Topic, Partition: p.Partition, Offset: -1, LeaderEpoch: -1}, err: err}
	}
	return out
}

// groupByTopic splits offsets into runs of one topic, keeping their order
// (requests list partitions topic by topic; the coordinator's "all
// offsets" answer is sorted by topic).
func groupByTopic(offsets []fetchedOffset) [][]fetchedOffset {
	var out [][]fetchedOffset
	for i, o := range offsets {
		if i == 0 || o.Topic != offsets[i-1].Topic {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], o)
	}
	return out
}
