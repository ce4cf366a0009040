package api

// Metadata: versions 0-12. v0: an empty topic list means all topics; v1+:
// null means all, an empty list means none. v4+ carries
// AllowAutoTopicCreation (earlier versions always allow it, subject to
// auto.create.topics.enable). v10+ returns topic ids; v12 may ask by id.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/metadata"
)

func init() {
	register(Spec{Key: 3, MinVersion: 0, MaxVersion: 12, Handle: handleMetadata, Blocking: true})
}

// authorizedOperationsOmitted is Kafka's INT32_MIN sentinel for "not asked".
const authorizedOperationsOmitted = -2147483648

func handleMetadata(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	s.Backend.SettleSuspects()
	im := s.Backend.Image()

	// respond lists the brokers last: which fenced ones stay depends
	// on the partitions the answer carries (fenced_listing.go).
	respond = func(respond Respond) Respond {
		return func(k kmsg.Response) {
			listFencedIn := recentlyFencedIn(resp.Topics, s.Backend.FencedAtMs, s.Backend.NowMs())
			for _, b := range liveBrokers(im, r.Listener, listFencedIn) {
				rb := kmsg.NewMetadataResponseBroker()
				rb.NodeID, rb.Host, rb.Port, rb.Rack = b.id, b.ep.Host, b.ep.Port, b.rack
				resp.Brokers = append(resp.Brokers, rb)
			}
			respond(k)
		}
	}(respond)
	cid := im.ClusterID()
	resp.ClusterID = &cid
	resp.ControllerID = s.Backend.NodeID()
	resp.AuthorizedOperations = s.clusterAuthorizedOperations(r, req.IncludeClusterAuthorizedOperations)
	// withOps adds the topic's authorized operations when asked (v8+).
	withOps := func(mt kmsg.MetadataResponseTopic) kmsg.MetadataResponseTopic {
		if req.IncludeTopicAuthorizedOperations && mt.Topic != nil {
			mt.AuthorizedOperations = s.authorizedOperations(r, authz.ResourceTopic, *mt.Topic)
		}
		return mt
	}

	allTopics := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if allTopics {
		// Topics the principal may not DESCRIBE are left out, so a
		// listing tells nothing of their existence.
		for _, t := range im.Topics() {
			if s.allowedQuiet(r, authz.OpDescribe, authz.ResourceTopic, t.Name) {
				resp.Topics = append(resp.Topics, withOps(topicMetadata(im, t, r.Listener, s.Backend.LeaderSuspect)))
			}
		}
		respond(resp)
		return
	}
	allowCreate := req.Version < 4 || req.AllowAutoTopicCreation
	for _, rt := range req.Topics {
		var (
			t     *metadata.Topic
			found bool
		)
		switch {
		case rt.Topic != nil && *rt.Topic != "":
			// Refused before its existence is told, as Kafka does.
			if !s.allowed(r, authz.OpDescribe, authz.ResourceTopic, *rt.Topic) {
				resp.Topics = append(resp.Topics, topicError(rt, kerr.TopicAuthorizationFailed.Code))
				continue
			}
			t, found = im.Topic(*rt.Topic)
			// Internal topics are never auto-created with client defaults:
			// the group coordinator creates __consumer_offsets with its own.
			if !found && allowCreate && s.Backend.Config().AutoCreateTopicsEnable && !isInternalTopic(*rt.Topic) {
				if !s.allowedCreateTopic(r, *rt.Topic) {
					resp.Topics = append(resp.Topics, topicError(rt, kerr.TopicAuthorizationFailed.Code))
					continue
				}
				if err := s.autoCreateTopic(*rt.Topic); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
					resp.Topics = append(resp.Topics, topicError(rt, autoCreateErrorCode(err)))
					continue
				}
				im = s.Backend.Image()
				if t, found = im.Topic(*rt.Topic); !found {
					// Created, but not in this broker's image yet: as
					// Kafka answers an auto-created topic, "retry soon".
					resp.Topics = append(resp.Topics, topicError(rt, kerr.LeaderNotAvailable.Code))
					continue
				}
			}
		default:
			t, found = im.TopicByID(metadata.TopicID(rt.TopicID))
			if found && !s.allowed(r, authz.OpDescribe, authz.ResourceTopic, t.Name) {
				resp.Topics = append(resp.Topics, topicError(rt, kerr.TopicAuthorizationFailed.Code))
				continue
			}
		}
		if !found {
			resp.Topics = append(resp.Topics, topicError(rt, kerr.UnknownTopicOrPartition.Code))
			continue
		}
		resp.Topics = append(resp.Topics, withOps(topicMetadata(im, t, r.Listener, s.Backend.LeaderSuspect)))
	}
	respond(resp)
}

// autoCreateErrorCode is the code a Metadata answer gives a topic whose
// auto-creation failed. A failure to reach or keep a controller is
// transient and not the client's to handle (it cannot reach controllers):
// LEADER_NOT_AVAILABLE, which clients retry, as Kafka answers while the
// creation is under way. A refusal (a bad name, too few brokers for the
// replication factor) is the controller's own answer.
func autoCreateErrorCode(err error) int16 {
	switch code := ErrorCode(err); code {
	case kerr.NotController.Code, kerr.RequestTimedOut.Code, kerr.UnknownServerError.Code:
		return kerr.LeaderNotAvailable.Code
	default:
		return code
	}
}

func topicError(rt kmsg.MetadataRequestTopic, code int16) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = rt.Topic
	mt.TopicID = rt.TopicID
	mt.ErrorCode = code
	mt.AuthorizedOperations = authorizedOperationsOmitted
	return mt
}

func topicMetadata(im *metadata.Image, t *metadata.Topic, listener string, suspect func(int32) bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(t.Name)
	mt.AuthorizedOperations = authorizedOperationsOmitted
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.Index
		mp.Leader = p.Leader
		mp.LeaderEpoch = p.LeaderEpoch
		mp.Replicas = append([]int32(nil), p.Replicas...)
		mp.ISR = append([]int32(nil), p.ISR...)
		for _, id := range p.Replicas {
			if b, ok := im.Broker(id); !ok || b.Fenced {
				mp.OfflineReplicas = append(mp.OfflineReplicas, id)
			}
		}
		if p.Leader >= 0 && suspect(p.Leader) {
			// The leader most likely just died; its fencing is on the way.
			// LEADER_NOT_AVAILABLE makes clients ask again shortly instead
			// of retrying a dead address until their metadata expires.
			mp.Leader = -1
		}
		if mp.Leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// liveBroker is an unfenced broker as a client on one listener sees it.
type liveBroker struct {
	id   int32
	ep   metadata.Endpoint
	rack *string
}

// liveBrokers lists the unfenced brokers reachable on a listener, and
// the fenced ones listFenced names (fenced_listing.go).
func liveBrokers(im *metadata.Image, listener string, listFenced func(id int32) bool) []liveBroker {
	var out []liveBroker
	for _, b := range im.Brokers() {
		if b.Fenced && !listFenced(b.ID) {
			continue
		}
		ep, ok := endpointFor(b, listener)
		if !ok {
			continue
		}
		lb := liveBroker{id: b.ID, ep: ep}
		if b.Rack != "" {
			rack := b.Rack
			lb.rack = &rack
		}
		out = append(out, lb)
	}
	return out
}

// endpointFor picks the broker's endpoint on the listener the client used,
// falling back to its first endpoint when that listener is unknown to it.
func endpointFor(b *metadata.Broker, listener string) (metadata.Endpoint, bool) {
	for _, ep := range b.Endpoints {
		if ep.Listener == listener {
			return ep, true
		}
	}
	if len(b.Endpoints) > 0 {
		return b.Endpoints[0], true
	}
	return metadata.Endpoint{}, false
}

func isInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state"
}
