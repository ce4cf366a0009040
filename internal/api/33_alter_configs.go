package api

// AlterConfigs: versions 0-2. Replaces the whole set of overrides of a
// topic, or of the dynamic configs of a broker resource (a broker id, or
// "" for the cluster-wide default), as Kafka's legacy, non-incremental
// semantics do. Like every admin request it is forwarded to the active
// controller, which validates and writes the metadata records; a broker
// resource naming another broker is refused first, by the broker that
// received it (config_resources.go).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/controller"
)

func init() {
	register(Spec{Key: 33, MinVersion: 0, MaxVersion: 2, Handle: handleAlterConfigs, Blocking: true, Forwardable: true,
		Preprocess: preprocessAlterConfigs})
}

func handleAlterConfigs(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range req.Resources {
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType = rr.ResourceType
		res.ResourceName = rr.ResourceName
		err := s.configResourceDenied(r, authz.OpAlterConfigs, rr.ResourceType, rr.ResourceName)
		var target configTarget
		if err == nil {
			target, err = s.alterableConfigs(rr.ResourceType, rr.ResourceName)
		}
		if err != nil {
			res.ErrorCode, res.ErrorMessage = ErrorCode(err), ErrorMessage(err)
			resp.Resources = append(resp.Resources, res)
			continue
		}
		set := map[string]*string{}
		for k := range target.current {
			set[k] = nil // legacy AlterConfigs replaces the whole set
		}
		for _, c := range rr.Configs {
			set[c.Name] = c.Value
		}
		err = target.alter(set, req.ValidateOnly)
		res.ErrorCode = ErrorCode(err)
		res.ErrorMessage = ErrorMessage(err)
		resp.Resources = append(resp.Resources, res)
	}
	respond(resp)
}

// configTarget is the resource of an alter request: its current dynamic
// configs and how to change them.
type configTarget struct {
	current map[string]string
	// list reports whether a property is list-valued, so that
	// IncrementalAlterConfigs may APPEND to and SUBTRACT from it.
	list  func(name string) bool
	alter func(set map[string]*string, validateOnly bool) error
}

// alterableConfigs resolves the resource of an alter request: a topic, or
// a broker resource (a broker id, or "" for the cluster-wide default).
func (s *Server) alterableConfigs(resourceType kmsg.ConfigResourceType, name string) (configTarget, error) {
	im := s.Backend.Image()
	switch resourceType {
	case resourceTopic:
		t, ok := im.Topic(name)
		if !ok {
			return configTarget{}, kerr.UnknownTopicOrPartition
		}
		return configTarget{
			current: t.Configs,
			list:    func(string) bool { return true }, // ValidateTopicOverrides judges the result
			alter:   func(set map[string]*string, v bool) error { return s.alterTopicConfigs(name, set, v) },
		}, nil
	case resourceBroker:
		return configTarget{
			current: im.BrokerConfigs(name),
			list: func(n string) bool {
				p, ok := config.LookupBroker(n)
				return ok && p.Kind == config.KindList
			},
			alter: func(set map[string]*string, v bool) error { return s.alterBrokerConfigs(name, set, v) },
		}, nil
	}
	return configTarget{}, fmt.Errorf("%w: configs of resource type %d cannot be altered (only topics and brokers)", kerr.InvalidRequest, resourceType)
}

func (s *Server) alterTopicConfigs(topic string, set map[string]*string, validateOnly bool) error {
	recs, err := controller.AlterTopicConfigs(s.Backend.Image(), topic, set, config.ValidateTopicOverrides)
	if err != nil || validateOnly {
		return err
	}
	return s.Backend.Commit(recs)
}

func (s *Server) alterBrokerConfigs(resource string, set map[string]*string, validateOnly bool) error {
	recs, err := controller.AlterBrokerConfigs(s.Backend.Image(), resource, set, config.ValidateDynamic)
	if err != nil || validateOnly || len(recs) == 0 {
		return err
	}
	return s.Backend.Commit(recs)
}
