package api

// KIP-951: a NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH answer to
// Produce (v10+) or Fetch (v12+) names the partition's current leader and
// epoch, and the response lists that leader's endpoint (Produce v10+, Fetch
// v16+), so clients redirect without a Metadata round trip.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/metadata"
)

func needsLeaderHint(code int16) bool {
	return code == kerr.NotLeaderForPartition.Code || code == kerr.FencedLeaderEpoch.Code
}

// leaderHint looks up a partition's leader in the image. ok is false when
// there is nothing useful to say (unknown partition, no leader).
func leaderHint(im *metadata.Image, t *metadata.Topic, partition int32) (leader, epoch int32, ok bool) {
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return 0, 0, false
	}
	p := t.Partitions[partition]
	if p.Leader < 0 {
		return 0, 0, false
	}
	return p.Leader, p.LeaderEpoch, true
}

// hintEndpoints collects the endpoints of the hinted leaders on the
// client's listener. Its maps are made by the first add: almost every
// Produce and Fetch answer hints nothing.
type hintEndpoints struct {
	im       *metadata.Image
	listener string
	seen     map[int32]metadata.Endpoint
	rack     map[int32]*string
}

func newHintEndpoints(im *metadata.Image, listener string) *hintEndpoints {
	return &hintEndpoints{im: im, listener: listener}
}

func (h *hintEndpoints) add(id int32) {
	if _, ok := h.seen[id]; ok {
		return
	}
	if h.seen == nil {
		h.seen, h.rack = map[int32]metadata.Endpoint{}, map[int32]*string{}
	}
	b, ok := h.im.Broker(id)
	if !ok {
		return
	}
	ep, ok := endpointFor(b, h.listener)
	if !ok {
		return
	}
	h.seen[id] = ep
	if b.Rack != "" {
		r := b.Rack
		h.rack[id] = &r
	}
}

func (h *hintEndpoints) produceBrokers() []kmsg.ProduceResponseBroker {
	var out []kmsg.ProduceResponseBroker
	for id, ep := range h.seen {
		b := kmsg.NewProduceResponseBroker()
		b.NodeID, b.Host, b.Port, b.Rack = id, ep.Host, ep.Port, h.rack[id]
		out = append(out, b)
	}
	return out
}

func (h *hintEndpoints) fetchBrokers() []kmsg.FetchResponseBroker {
	var out []kmsg.FetchResponseBroker
	for id, ep := range h.seen {
		b := kmsg.NewFetchResponseBroker()
		b.NodeID, b.Host, b.Port, b.Rack = id, ep.Host, ep.Port, h.rack[id]
		out = append(out, b)
	}
	return out
}

// hintPartitions walks a response's partitions that need a hint and
// fills each through set; it returns the endpoints of the hinted leaders.
func hintPartitions(s *Server, r *Request, byID bool, each func(visit func(topic string, id [16]byte, partition int32, code int16, set func(leader, epoch int32)))) *hintEndpoints {
	im := s.Backend.Image()
	eps := newHintEndpoints(im, r.Listener)
	each(func(topic string, id [16]byte, partition int32, code int16, set func(leader, epoch int32)) {
		if !needsLeaderHint(code) {
			return
		}
		t, _ := lookupTopic(im, byID, topic, id)
		if leader, epoch, ok := leaderHint(im, t, partition); ok && leader != s.Backend.NodeID() {
			set(leader, epoch)
			eps.add(leader)
		}
	})
	return eps
}

// addProduceLeaderHints fills KIP-951 hints into a finished Produce
// response.
func addProduceLeaderHints(s *Server, r *Request, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) {
	if req.Version < 10 {
		return
	}
	eps := hintPartitions(s, r, req.Version >= 13, func(visit func(string, [16]byte, int32, int16, func(int32, int32))) {
		for ti := range resp.Topics {
			st := &resp.Topics[ti]
			for pi := range st.Partitions {
				sp := &st.Partitions[pi]
				visit(st.Topic, st.TopicID, sp.Partition, sp.ErrorCode, func(leader, epoch int32) {
					sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = leader, epoch
				})
			}
		}
	})
	resp.Brokers = eps.produceBrokers()
}

// addFetchLeaderHints fills KIP-951 hints into a finished Fetch response.
func addFetchLeaderHints(s *Server, r *Request, req *kmsg.FetchRequest, resp *kmsg.FetchResponse) {
	if req.Version < 12 {
		return
	}
	eps := hintPartitions(s, r, req.Version >= 13, func(visit func(string, [16]byte, int32, int16, func(int32, int32))) {
		for ti := range resp.Topics {
			st := &resp.Topics[ti]
			for pi := range st.Partitions {
				sp := &st.Partitions[pi]
				visit(st.Topic, st.TopicID, sp.Partition, sp.ErrorCode, func(leader, epoch int32) {
					sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = leader, epoch
				})
			}
		}
	})
	if req.Version >= 16 {
		resp.Brokers = eps.fetchBrokers()
	}
}
