package api

// ElectLeaders: versions 0-2. Preferred election (type 0) moves leadership
// to each partition's first replica when it is alive and in the ISR;
// unclean election (type 1, v1+) gives a leaderless partition any live
// replica, accepting the loss of what only the ISR had. A null topic list
// means every partition. Decided by the active controller (forwarded).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/metadata"
)

func init() {
	register(Spec{Key: 43, MinVersion: 0, MaxVersion: 2, Handle: handleElectLeaders, Blocking: true, Forwardable: true})
}

const (
	electionPreferred = 0
	electionUnclean   = 1
)

func handleElectLeaders(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	im := s.Backend.Image()
	electionType := int8(electionPreferred)
	if req.Version >= 1 {
		electionType = req.ElectionType
	}
	if electionType != electionPreferred && electionType != electionUnclean {
		resp.ErrorCode = kerr.InvalidRequest.Code
		respond(resp)
		return
	}

	if !s.allowedCluster(r, authz.OpAlter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		for _, rt := range req.Topics {
			et := kmsg.NewElectLeadersResponseTopic()
			et.Topic = rt.Topic
			for _, p := range rt.Partitions {
				ep := kmsg.NewElectLeadersResponseTopicPartition()
				ep.Partition, ep.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
				et.Partitions = append(et.Partitions, ep)
			}
			resp.Topics = append(resp.Topics, et)
		}
		respond(resp)
		return
	}

	// Which partitions: the request's, or all of them.
	type target struct {
		t *metadata.Topic
		p int32
	}
	var targets []target
	var unknown []kmsg.ElectLeadersResponseTopic
	if req.Topics == nil {
		for _, t := range im.Topics() {
			for _, p := range t.Partitions {
				targets = append(targets, target{t, p.Index})
			}
		}
	} else {
		for _, rt := range req.Topics {
			t, ok := im.Topic(rt.Topic)
			for _, p := range rt.Partitions {
				if !ok || p < 0 || int(p) >= len(t.Partitions) {
					et := kmsg.NewElectLeadersResponseTopic()
					et.Topic = rt.Topic
					ep := kmsg.NewElectLeadersResponseTopicPartition()
					ep.Partition = p
					ep.ErrorCode = kerr.UnknownTopicOrPartition.Code
					et.Partitions = append(et.Partitions, ep)
					unknown = append(unknown, et)
					continue
				}
				targets = append(targets, target{t, p})
			}
		}
	}

	var candidates []metadata.Record
	if electionType == electionPreferred {
		candidates = controller.PreferredLeaderElection(im)
	} else {
		candidates = controller.ElectLeaderless(im, func(*metadata.Topic) bool { return true })
	}
	var recs []metadata.Record
	outcome := map[*metadata.Topic]map[int32]int16{}
	for _, tg := range targets {
		i := slices.IndexFunc(candidates, func(rec metadata.Record) bool {
			pc, ok := rec.(metadata.PartitionChange)
			return ok && pc.TopicID == tg.t.ID && pc.Partition == tg.p
		})
		code := int16(0)
		switch {
		case i >= 0:
			recs = append(recs, candidates[i])
		case electionType == electionPreferred && tg.t.Partitions[tg.p].Leader == tg.t.Partitions[tg.p].Replicas[0]:
			code = kerr.ElectionNotNeeded.Code
		case electionType == electionPreferred:
			code = kerr.PreferredLeaderNotAvailable.Code
		case tg.t.Partitions[tg.p].Leader >= 0:
			code = kerr.ElectionNotNeeded.Code
		default:
			code = kerr.EligibleLeadersNotAvailable.Code
		}
		if outcome[tg.t] == nil {
			outcome[tg.t] = map[int32]int16{}
		}
		outcome[tg.t][tg.p] = code
	}
	commitErr := s.Backend.Commit(recs)
	for t, parts := range outcome {
		et := kmsg.NewElectLeadersResponseTopic()
		et.Topic = t.Name
		for p, code := range parts {
			ep := kmsg.NewElectLeadersResponseTopicPartition()
			ep.Partition = p
			ep.ErrorCode = code
			if code == 0 && commitErr != nil {
				ep.ErrorCode = ErrorCode(commitErr)
				ep.ErrorMessage = ErrorMessage(commitErr)
			}
			et.Partitions = append(et.Partitions, ep)
		}
		resp.Topics = append(resp.Topics, et)
	}
	resp.Topics = append(resp.Topics, unknown...)
	respond(resp)
}
