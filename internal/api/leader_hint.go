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
// client's listener.
type hintEndpoints struct {
	im       *metadata.Image
	listener string
	seen     map[int32]metadata.Endpoint
	rack     map[int32]*string
}

func newHintEndpoints(im *metadata.Image, listener string) *hintEndpoints {
	return &hintEndpoints{im: im, listener: listener, seen: map[int32]metadata.Endpoint{}, rack: map[int32]*string{}}
}

func (h *hintEndpoints) add(id int32) {
	if _, ok := h.seen[id]; ok {
		return
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

// addProduceLeaderHints fills KIP-951 hints into a finished Produce
// response.
func addProduceLeaderHints(s *Server, r *Request, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) {
	if req.Version < 10 {
		return
	}
	im := s.Backend.Image()
	eps := newHintEndpoints(im, r.Listener)
	for ti := range resp.Topics {
		st := &resp.Topics[ti]
		t, _ := lookupTopic(im, req.Version >= 13, st.Topic, st.TopicID)
		for pi := range st.Partitions {
			sp := &st.Partitions[pi]
			if !needsLeaderHint(sp.ErrorCode) {
				continue
			}
			if leader, epoch, ok := leaderHint(im, t, sp.Partition); ok && leader != s.Backend.NodeID() {
				sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = leader, epoch
				eps.add(leader)
			}
		}
	}
	resp.Brokers = eps.produceBrokers()
}

// addFetchLeaderHints fills KIP-951 hints into a finished Fetch response.
func addFetchLeaderHints(s *Server, r *Request, req *kmsg.FetchRequest, resp *kmsg.FetchResponse) {
	if req.Version < 12 {
		return
	}
	im := s.Backend.Image()
	eps := newHintEndpoints(im, r.Listener)
	for ti := range resp.Topics {
		st := &resp.Topics[ti]
		t, _ := lookupTopic(im, req.Version >= 13, st.Topic, st.TopicID)
		for pi := range st.Partitions {
			sp := &st.Partitions[pi]
			if !needsLeaderHint(sp.ErrorCode) {
				continue
			}
			if leader, epoch, ok := leaderHint(im, t, sp.Partition); ok && leader != s.Backend.NodeID() {
				sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = leader, epoch
				eps.add(leader)
			}
		}
	}
	if req.Version >= 16 {
		resp.Brokers = eps.fetchBrokers()
	}
}
