package api

// IncrementalAlterConfigs: versions 0-1. SET and DELETE on topic configs
// and on the dynamic configs of broker resources (a broker id, or "" for
// the cluster-wide default); APPEND and SUBTRACT apply to list-valued
// configs (cleanup.policy). Forwarded to the active controller, after the
// broker that received it refused the broker resources naming another
// broker (config_resources.go).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
)

func init() {
	register(Spec{Key: 44, MinVersion: 0, MaxVersion: 1, Handle: handleIncrementalAlterConfigs, Blocking: true, Forwardable: true,
		Preprocess: preprocessIncrementalAlterConfigs})
}

// Kafka's IncrementalAlterConfigs operations.
const (
	opSet      = 0
	opDelete   = 1
	opAppend   = 2
	opSubtract = 3
)

func handleIncrementalAlterConfigs(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range req.Resources {
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
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
		var bad error
		for _, c := range rr.Configs {
			switch c.Op {
			case opSet:
				set[c.Name] = c.Value
			case opDelete:
				set[c.Name] = nil
			case opAppend, opSubtract:
				if !target.list(c.Name) {
					// Kafka: InvalidConfigurationException.
					bad = fmt.Errorf("%w: config value append or subtract is not allowed for %s, which is not a list", kerr.InvalidConfig, c.Name)
					continue
				}
				cur := splitList(target.current[c.Name])
				var arg []string
				if c.Value != nil {
					arg = splitList(*c.Value)
				}
				for _, v := range arg {
					i := slices.Index(cur, v)
					if c.Op == opAppend && i < 0 {
						cur = append(cur, v)
					} else if c.Op == opSubtract && i >= 0 {
						cur = slices.Delete(cur, i, i+1)
					}
				}
				joined := strings.Join(cur, ",")
				set[c.Name] = &joined
			default:
				bad = kerr.InvalidRequest
			}
		}
		if bad != nil {
			err = bad
		} else {
			err = target.alter(set, req.ValidateOnly)
		}
		res.ErrorCode = ErrorCode(err)
		res.ErrorMessage = ErrorMessage(err)
		resp.Resources = append(resp.Resources, res)
	}
	respond(resp)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
