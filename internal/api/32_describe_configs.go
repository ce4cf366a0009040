package api

// DescribeConfigs: versions 1-4. Topic resources list every topic config
// with its effective value and where it came from (topic override, broker
// static config, default), with synonyms when asked. A broker's resource
// (its id) lists its properties with their dynamic values from the
// metadata image (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG)
// over the static ones; the resource "" lists the cluster-wide dynamic
// defaults only, as Kafka answers kafka-configs --entity-default. A broker
// logger's resource (type 8, broker_loggers.go) lists the broker's
// loggers and their levels.

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
)

func init() {
	register(Spec{Key: 32, MinVersion: 1, MaxVersion: 4, Handle: handleDescribeConfigs})
}

// Kafka's ConfigResource types.
const (
	resourceTopic  = 2
	resourceBroker = 4
)

func handleDescribeConfigs(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType = rr.ResourceType
		res.ResourceName = rr.ResourceName
		var entries []config.ConfigEntry
		var configs []kmsg.DescribeConfigsResponseResourceConfig
		if err := s.configResourceDenied(r, authz.OpDescribeConfigs, rr.ResourceType, rr.ResourceName); err != nil {
			res.ErrorCode, res.ErrorMessage = ErrorCode(err), ErrorMessage(err)
			resp.Resources = append(resp.Resources, res)
			continue
		}
		switch rr.ResourceType {
		case resourceTopic:
			t, ok := s.Backend.Image().Topic(rr.ResourceName)
			if !ok {
				res.ErrorCode = kerr.UnknownTopicOrPartition.Code
				break
			}
			var err error
			if entries, err = config.DescribeTopic(s.Backend.Config(), t.Configs); err != nil {
				res.ErrorCode = ErrorCode(err)
				res.ErrorMessage = ErrorMessage(err)
			}
		case resourceBroker:
			// Admin clients send a broker's resource to that broker.
			if err := s.foreignBrokerError(rr.ResourceName, true); err != nil {
				res.ErrorCode, res.ErrorMessage = ErrorCode(err), ErrorMessage(err)
				break
			}
			dyn := config.DynamicOf(s.Backend.Image(), s.Backend.NodeID())
			if rr.ResourceName == metadata.ClusterDefaultBroker {
				entries = config.DescribeBrokerDefault(s.Backend.Config(), dyn)
			} else {
				entries = config.DescribeBroker(s.Backend.Config(), dyn)
			}
		case resourceBrokerLogger:
			var err error
			if configs, err = s.describeBrokerLoggers(rr.ResourceName); err != nil {
				res.ErrorCode, res.ErrorMessage = ErrorCode(err), ErrorMessage(err)
			}
		default:
			res.ErrorCode = kerr.InvalidRequest.Code
			res.ErrorMessage = kmsg.StringPtr("unsupported resource type " + strconv.Itoa(int(rr.ResourceType)))
		}
		for _, e := range entries {
			configs = append(configs, describeEntry(e, req.IncludeSynonyms, req.IncludeDocumentation))
		}
		wanted := map[string]bool{}
		for _, n := range rr.ConfigNames {
			wanted[n] = true
		}
		for _, c := range configs {
			if rr.ConfigNames != nil && !wanted[c.Name] {
				continue
			}
			res.Configs = append(res.Configs, c)
		}
		resp.Resources = append(resp.Resources, res)
	}
	respond(resp)
}

func describeEntry(e config.ConfigEntry, synonyms, docs bool) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = e.Name
	if e.Sensitive {
		c.IsSensitive = true // Value stays null, as Kafka answers secrets
	} else {
		v := e.Value
		c.Value = &v
	}
	c.ReadOnly = e.ReadOnly
	c.IsDefault = e.Source == config.SourceDefault
	c.Source = kmsg.ConfigSource(e.Source)
	c.ConfigType = kmsg.ConfigType(e.Type)
	if docs {
		d := e.Doc
		c.Documentation = &d
	}
	if synonyms {
		for _, syn := range e.Synonyms {
			sc := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			sc.Name = syn.Name
			if !e.Sensitive {
				sv := syn.Value
				sc.Value = &sv
			}
			sc.Source = kmsg.ConfigSource(syn.Source)
			c.ConfigSynonyms = append(c.ConfigSynonyms, sc)
		}
	}
	return c
}
