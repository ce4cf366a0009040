package api

// OffsetFetch: versions 1-8. v2+ fetches every committed offset of the
// group when the topic list is null and answers a top-level error; v5+
// returns the leader epoch; v7+ may ask for stable offsets
// (require_stable, KIP-447): a partition with offsets committed by a
// transaction that has not ended yet (TxnOffsetCommit) then answers
// UNSTABLE_OFFSET_COMMIT, offset -1, so that the client retries until the
// transaction's outcome is known; without it the committed offset is
// answered, as Kafka does. v8 fetches for several groups at once, each
// answered on its own. A partition without a committed offset answers
// offset -1.

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
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
			parts = requestedPartitions(len(req.Topics), func(i int) (string, []int32) {
				return req.Topics[i].Topic, req.Topics[i].Partitions
			})
		}
		s.fetchOffsets(r, req.Group, parts, req.RequireStable, func(fetched []fetchedOffset, err error) {
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
		})
		return
	}
	// v8: one answer per group, in request order, sent when all are in.
	resp.Groups = make([]kmsg.OffsetFetchResponseGroup, len(req.Groups))
	var mu sync.Mutex
	pending := len(req.Groups)
	groupDone := func() {
		mu.Lock()
		pending--
		last := pending == 0
		mu.Unlock()
		if last {
			respond(resp)
		}
	}
	if pending == 0 {
		respond(resp)
		return
	}
	for i, g := range req.Groups {
		rg := &resp.Groups[i]
		*rg = kmsg.NewOffsetFetchResponseGroup()
		rg.Group = g.Group
		if i >= maxFetchGroups {
			rg.ErrorCode = kerr.InvalidRequest.Code
			groupDone()
			continue
		}
		var parts []group.TopicPartition
		if g.Topics != nil {
			parts = requestedPartitions(len(g.Topics), func(i int) (string, []int32) {
				return g.Topics[i].Topic, g.Topics[i].Partitions
			})
		}
		s.fetchOffsets(r, g.Group, parts, req.RequireStable, func(fetched []fetchedOffset, err error) {
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
			groupDone()
		})
	}
}

// requestedPartitions flattens a request's topics (n of them, read by at)
// into partitions; never nil, so an empty list asks for nothing rather
// than everything.
func requestedPartitions(n int, at func(int) (string, []int32)) []group.TopicPartition {
	parts := []group.TopicPartition{}
	for i := range n {
		topic, ps := at(i)
		for _, p := range ps {
			parts = append(parts, group.TopicPartition{Topic: topic, Partition: p})
		}
	}
	return parts
}

// fetchedOffset is a fetched offset with its partition's own error.
type fetchedOffset struct {
	group.FetchedOffset
	err error
}

// fetchOffsets reads a group's offsets for a principal with DESCRIBE on
// the group: of the topics it may not DESCRIBE, requested ones answer
// TOPIC_AUTHORIZATION_FAILED and, when all offsets are asked for, the
// others are left out, as Kafka does. requireStable answers partitions
// with pending transactional offsets UNSTABLE_OFFSET_COMMIT.
func (s *Server) fetchOffsets(r *Request, groupID string, parts []group.TopicPartition, requireStable bool, done func([]fetchedOffset, error)) {
	if groupID == "" {
		done(nil, kerr.InvalidGroupID)
		return
	}
	if !s.allowed(r, authz.OpDescribe, authz.ResourceGroup, groupID) {
		done(nil, kerr.GroupAuthorizationFailed)
		return
	}
	s.Backend.Groups().FetchOffsets(groupID, parts, func(fetched []group.FetchedOffset, err error) {
		if err != nil {
			done(nil, err)
			return
		}
		out := make([]fetchedOffset, 0, len(fetched))
		topicOK := map[string]bool{}
		for _, f := range fetched {
			ok, seen := topicOK[f.Topic]
			if !seen {
				ok = s.allowedQuiet(r, authz.OpDescribe, authz.ResourceTopic, f.Topic)
				topicOK[f.Topic] = ok
			}
			switch {
			case ok && requireStable && f.Unstable:
				f.Offset, f.LeaderEpoch, f.Metadata = -1, -1, ""
				out = append(out, fetchedOffset{FetchedOffset: f, err: kerr.UnstableOffsetCommit})
			case ok:
				out = append(out, fetchedOffset{FetchedOffset: f})
			case parts != nil:
				f.Offset, f.LeaderEpoch, f.Metadata = -1, -1, ""
				out = append(out, fetchedOffset{FetchedOffset: f, err: kerr.TopicAuthorizationFailed})
			}
		}
		done(out, nil)
	})
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
