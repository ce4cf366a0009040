package api

// AlterConfigs: versions 0-2. Replaces the whole set of overrides of a
// topic (Kafka's legacy, non-incremental semantics). Broker configs are
// static in Skein: changing them needs a restart, so broker resources are
// refused with a clear message.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/metadata"
)

func init() {
	register(Spec{Key: 33, MinVersion: 0, MaxVersion: 2, Handle: handleAlterConfigs, Blocking: true, Forwardable: true})
}

func handleAlterConfigs(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range req.Resources {
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType = rr.ResourceType
		res.ResourceName = rr.ResourceName
		err := s.configResourceDenied(r, authz.OpAlterConfigs, rr.ResourceType, rr.ResourceName)
		var t *metadata.Topic
		if err == nil {
			t, err = s.alterableTopic(rr.ResourceType, rr.ResourceName)
		}
		if err != nil {
			res.ErrorCode, res.ErrorMessage = ErrorCode(err), ErrorMessage(err)
			resp.Resources = append(resp.Resources, res)
			continue
		}
		set := map[string]*string{}
		for k := range t.Configs {
			set[k] = nil // legacy AlterConfigs replaces the whole override set
		}
		for _, c := range rr.Configs {
			set[c.Name] = c.Value
		}
		err = s.alterTopicConfigs(rr.ResourceName, set, req.ValidateOnly)
		res.ErrorCode = ErrorCode(err)
		res.ErrorMessage = ErrorMessage(err)
		resp.Resources = append(resp.Resources, res)
	}
	respond(resp)
}

// alterableTopic resolves the resource of an alter request: only topics
// can be altered, since broker configs are static in Skein.
func (s *Server) alterableTopic(resourceType kmsg.ConfigResourceType, name string) (*metadata.Topic, error) {
	if resourceType != resourceTopic {
		return nil, fmt.Errorf("%w: only topic configs can be altered; broker configs are static", kerr.InvalidRequest)
	}
	t, ok := s.Backend.Image().Topic(name)
	if !ok {
		return nil, kerr.UnknownTopicOrPartition
	}
	return t, nil
}

func (s *Server) alterTopicConfigs(topic string, set map[string]*string, validateOnly bool) error {
	recs, err := controller.AlterTopicConfigs(s.Backend.Image(), topic, set, config.ValidateTopicOverrides)
	if err != nil || validateOnly {
		return err
	}
	return s.Backend.Commit(recs)
}
