package api

// Config resources only the broker that received a request can judge.
// Kafka's brokers answer these before they forward the rest of an
// AlterConfigs or IncrementalAlterConfigs to the controller
// (ConfigAdminManager.preprocess): a broker resource that names another
// broker is refused, since only the broker named knows it is meant (an
// admin client sends a broker's resource to that broker), and a broker
// logger resource (broker_loggers.go) is applied here, its levels being
// this process's and no metadata.

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/metadata"
)

// kafkaError is an error code with Kafka's own message for it, sent as
// the answer's error message as it is.
type kafkaError struct {
	code *kerr.Error
	msg  string
}

func (e *kafkaError) Error() string { return e.msg }
func (e *kafkaError) Unwrap() error { return e.code }

// foreignBrokerError is nil when name is this broker's id (or, with
// allowDefault, the cluster default ""), else Kafka's INVALID_REQUEST for
// a broker resource sent to the wrong broker.
func (s *Server) foreignBrokerError(name string, allowDefault bool) error {
	id := s.Backend.NodeID()
	if name == strconv.Itoa(int(id)) || allowDefault && name == metadata.ClusterDefaultBroker {
		return nil
	}
	if allowDefault {
		return &kafkaError{kerr.InvalidRequest, fmt.Sprintf("Unexpected broker id, expected %d or empty string, but received %s", id, name)}
	}
	return &kafkaError{kerr.InvalidRequest, fmt.Sprintf("Unexpected broker id, expected %d, but received %s", id, name)}
}

// foreignBrokerResource is the local answer to an alter of a broker
// resource that names another broker: the principal's authorization on
// the cluster first, as for every broker resource, then the refusal.
// nil for every other resource, which the controller decides.
func (s *Server) foreignBrokerResource(r *Request, resourceType kmsg.ConfigResourceType, name string) error {
	if resourceType != resourceBroker || r.ControllerListener {
		// On a controller listener (kafka-configs --bootstrap-controller)
		// the request is the controllers' to judge: Kafka's controllers
		// alter any broker's resource.
		return nil
	}
	err := s.foreignBrokerError(name, true)
	if err == nil {
		return nil
	}
	if denied := s.configResourceDenied(r, authz.OpAlterConfigs, resourceType, name); denied != nil {
		return denied
	}
	return err
}

// splitLocal takes out of resources those answer answers on this node
// and keeps the others, in order, for the controller. local holds the
// answers by their index in the request (nil when there are none); rest
// says whether any resource is left.
func splitLocal[Req, Resp any](resources *[]Req, answer func(Req) (Resp, bool)) (local map[int]Resp, rest bool) {
	var kept []Req
	for i, rr := range *resources {
		res, ok := answer(rr)
		if !ok {
			kept = append(kept, rr)
			continue
		}
		if local == nil {
			local = map[int]Resp{}
		}
		local[i] = res
	}
	if local != nil {
		*resources = kept
	}
	return local, len(kept) > 0
}

// spliceLocal puts the local answers back at their places among the
// answers to the rest of the request.
func spliceLocal[Resp any](rest []Resp, local map[int]Resp) []Resp {
	n := len(rest) + len(local)
	out := make([]Resp, 0, n)
	for i := range n {
		if res, ok := local[i]; ok {
			out = append(out, res)
		} else if len(rest) > 0 {
			out = append(out, rest[0])
			rest = rest[1:]
		}
	}
	return append(out, rest...)
}

// preprocessAlterConfigs answers AlterConfigs' resources of other
// brokers.
func preprocessAlterConfigs(s *Server, r *Request) (merge func(kmsg.Response), rest bool) {
	req := r.Body.(*kmsg.AlterConfigsRequest)
	local, rest := splitLocal(&req.Resources, func(rr kmsg.AlterConfigsRequestResource) (kmsg.AlterConfigsResponseResource, bool) {
		err := s.foreignBrokerResource(r, rr.ResourceType, rr.ResourceName)
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		res.ErrorCode, res.ErrorMessage = ErrorCode(err), ErrorMessage(err)
		return res, err != nil
	})
	if local == nil {
		return nil, true
	}
	return func(resp kmsg.Response) {
		out := resp.(*kmsg.AlterConfigsResponse)
		out.Resources = spliceLocal(out.Resources, local)
	}, rest
}

// preprocessIncrementalAlterConfigs answers IncrementalAlterConfigs'
// resources of other brokers, and applies and answers its broker logger
// resources (broker_loggers.go).
func preprocessIncrementalAlterConfigs(s *Server, r *Request) (merge func(kmsg.Response), rest bool) {
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	local, rest := splitLocal(&req.Resources, func(rr kmsg.IncrementalAlterConfigsRequestResource) (kmsg.IncrementalAlterConfigsResponseResource, bool) {
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		if rr.ResourceType == resourceBrokerLogger {
			err = s.alterBrokerLoggers(r, rr, req.ValidateOnly)
		} else if err = s.foreignBrokerResource(r, rr.ResourceType, rr.ResourceName); err == nil {
			return res, false
		}
		res.ErrorCode, res.ErrorMessage = ErrorCode(err), ErrorMessage(err)
		return res, true
	})
	if local == nil {
		return nil, true
	}
	return func(resp kmsg.Response) {
		out := resp.(*kmsg.IncrementalAlterConfigsResponse)
		out.Resources = spliceLocal(out.Resources, local)
	}, rest
}
