package api

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/metadata"
)

// Principal is who sent a request, as the connection authenticated it.
type Principal = authz.Principal

// BrokerPrincipal is the principal of connections on the controller
// listeners and on a dedicated inter-broker listener: the cluster's own
// brokers and controllers (replica fetches, forwarded admin requests,
// broker registration). It is allowed everything, as Kafka's brokers are
// when their principal is a super user. Its type is one no client
// authentication produces, so no SASL user can take it.
var BrokerPrincipal = Principal{Type: "Skein", Name: "broker"}

// forwardedPrincipalTag carries, in a forwarded admin request, the
// principal and host of the client that sent it (what Kafka's Envelope
// carries), so the controller authorizes the client and not the
// forwarding broker. It is trusted only from BrokerPrincipal.
const forwardedPrincipalTag = 0x5E12

// isBroker says whether the request comes from the cluster itself: a
// broker's connection, or a request a node makes of its own handlers
// (no principal).
func (r *Request) isBroker() bool {
	return r.Principal == BrokerPrincipal || r.Principal == (Principal{})
}

// authorizer is the configured authorizer over the current ACLs; ok is
// false when authorizer.class.name is empty (no authorization).
func (s *Server) authorizer() (a authz.Authorizer, ok bool) {
	cfg := s.Backend.Config()
	if cfg.Authorizer == "" {
		return authz.Authorizer{}, false
	}
	return authz.Authorizer{
		ACLs:     s.Backend.Image().ACLs(),
		Settings: authz.Settings{SuperUsers: cfg.SuperUsers, AllowIfNoACL: cfg.AllowIfNoACL},
	}, true
}

// allowed is the one check every handler makes: may the request's
// principal perform op on the resource? Denials are counted.
func (s *Server) allowed(r *Request, op authz.Operation, rt authz.ResourceType, name string) bool {
	a, on := s.authorizer()
	if !on || r.isBroker() || a.Authorize(r.Principal, r.Host, op, rt, name) {
		return true
	}
	s.denied(rt)
	return false
}

// allowedCluster checks op on the cluster resource.
func (s *Server) allowedCluster(r *Request, op authz.Operation) bool {
	return s.allowed(r, op, authz.ResourceCluster, authz.ClusterName)
}

// allowedQuiet checks like allowed without counting a denial: for
// fallbacks (CREATE on the cluster, then on the topic) and filters, where
// one refusal is not the request's denial.
func (s *Server) allowedQuiet(r *Request, op authz.Operation, rt authz.ResourceType, name string) bool {
	a, on := s.authorizer()
	return !on || r.isBroker() || a.Authorize(r.Principal, r.Host, op, rt, name)
}

// allowedAnyOf checks op on at least one resource of a type (Kafka's
// authorizeByResourceType).
func (s *Server) allowedAnyOf(r *Request, op authz.Operation, rt authz.ResourceType) bool {
	a, on := s.authorizer()
	return !on || r.isBroker() || a.AuthorizeAny(r.Principal, r.Host, op, rt)
}

// allowedCreateTopic is Kafka's rule for creating a topic: CREATE on the
// cluster, else CREATE on the topic.
func (s *Server) allowedCreateTopic(r *Request, topic string) bool {
	return s.allowedQuiet(r, authz.OpCreate, authz.ResourceCluster, authz.ClusterName) ||
		s.allowed(r, authz.OpCreate, authz.ResourceTopic, topic)
}

func (s *Server) denied(rt authz.ResourceType) {
	if s.OnDenied != nil {
		s.OnDenied(rt)
	}
}

// operationsOf are the operations Kafka reports in authorized-operations
// bit sets, per resource type.
var operationsOf = map[authz.ResourceType][]authz.Operation{
	authz.ResourceTopic: {authz.OpRead, authz.OpWrite, authz.OpCreate, authz.OpDelete, authz.OpAlter,
		authz.OpDescribe, authz.OpDescribeConfigs, authz.OpAlterConfigs},
	authz.ResourceGroup: {authz.OpRead, authz.OpDescribe, authz.OpDelete},
	authz.ResourceCluster: {authz.OpCreate, authz.OpClusterAction, authz.OpDescribeConfigs, authz.OpAlterConfigs,
		authz.OpIdempotentWrite, authz.OpAlter, authz.OpDescribe},
}

// authorizedOperations is the include_*_authorized_operations bit set:
// bit n set when operation code n is allowed on the resource.
func (s *Server) authorizedOperations(r *Request, rt authz.ResourceType, name string) int32 {
	var bits int32
	for _, op := range operationsOf[rt] {
		if s.allowedQuiet(r, op, rt, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// forwardedTag marks every request a broker forwards, whoever sent it:
// the controller knows the forwarding broker preprocessed it (answered
// what only that broker can, Spec.Preprocess). Its value is the
// forwarding broker's id, for the record.
const forwardedTag = 0x5E13

// tagForwardedPrincipal records, in a request this broker forwards to the
// controller, that it forwards it, and the client's principal.
func tagForwardedPrincipal(r *Request, from int32) {
	tags := requestTags(r.Body)
	if tags == nil {
		return
	}
	tags.Set(forwardedTag, []byte(strconv.Itoa(int(from))))
	if !r.isBroker() {
		tags.Set(forwardedPrincipalTag, []byte(r.Principal.String()+"\n"+r.Host))
	}
}

// takeForwardedPrincipal replaces a broker's request's principal with the
// client's the forwarding broker recorded, removes the tags and reports
// whether a broker forwarded the request.
func takeForwardedPrincipal(r *Request) (forwarded bool) {
	tags := requestTags(r.Body)
	if tags == nil {
		return false
	}
	var rest kmsg.Tags
	var found []byte
	tags.Each(func(key uint32, val []byte) {
		switch key {
		case forwardedPrincipalTag:
			found = val
		case forwardedTag:
			forwarded = true
		default:
			rest.Set(key, val)
		}
	})
	if found == nil && !forwarded {
		return false
	}
	*tags = rest
	if r.Principal != BrokerPrincipal {
		// Only brokers may speak for a client; anyone else's tags are
		// dropped and the request stays theirs, to be judged whole.
		return false
	}
	if found == nil {
		return forwarded
	}
	ps, host, _ := strings.Cut(string(found), "\n")
	p, err := authz.ParsePrincipal(ps)
	if err != nil {
		// A malformed tag must not leave the broker's own rights.
		p = authz.Anonymous
	}
	r.Principal, r.Host = p, host
	return forwarded
}

// requestTags reaches the top-level tagged fields of any kmsg request.
func requestTags(req kmsg.Request) *kmsg.Tags {
	v := reflect.ValueOf(req)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("UnknownTags")
	if !f.IsValid() || !f.CanAddr() {
		return nil
	}
	tags, _ := f.Addr().Interface().(*kmsg.Tags)
	return tags
}

// lookupAuthorized is lookupTopic behind the check of op on the topic. A
// name is checked before its existence is told, so an unauthorized
// principal learns nothing of which topics exist (Kafka answers
// TOPIC_AUTHORIZATION_FAILED whether or not it does); an id that names
// no topic stays UNKNOWN_TOPIC_ID.
func (s *Server) lookupAuthorized(r *Request, op authz.Operation, im *metadata.Image, byID bool, name string, id [16]byte) (*metadata.Topic, error) {
	t, err := lookupTopic(im, byID, name, id)
	if t != nil {
		name = t.Name
	} else if byID {
		return nil, err
	}
	if !s.allowed(r, op, authz.ResourceTopic, name) {
		return nil, fmt.Errorf("%w: %s on topic %q", kerr.TopicAuthorizationFailed, op, name)
	}
	return t, err
}

// configResourceDenied is the error for a config resource the principal
// may not describe or alter (op DESCRIBE_CONFIGS or ALTER_CONFIGS): a
// topic's are checked on the topic, a broker's and a broker logger's on
// the cluster.
func (s *Server) configResourceDenied(r *Request, op authz.Operation, resourceType kmsg.ConfigResourceType, name string) error {
	switch resourceType {
	case resourceTopic:
		if !s.allowed(r, op, authz.ResourceTopic, name) {
			return fmt.Errorf("%w: %s on topic %q", kerr.TopicAuthorizationFailed, op, name)
		}
	case resourceBroker, resourceBrokerLogger:
		if !s.allowedCluster(r, op) {
			return fmt.Errorf("%w: %s on the cluster", kerr.ClusterAuthorizationFailed, op)
		}
	}
	return nil
}

// clusterAuthorizedOperations answers include_cluster_authorized_operations
// as Kafka does: the operations allowed on the cluster when the principal
// may DESCRIBE it, else none; INT32_MIN when not asked.
func (s *Server) clusterAuthorizedOperations(r *Request, asked bool) int32 {
	switch {
	case !asked:
		return authorizedOperationsOmitted
	case !s.allowedQuiet(r, authz.OpDescribe, authz.ResourceCluster, authz.ClusterName):
		return 0
	}
	return s.authorizedOperations(r, authz.ResourceCluster, authz.ClusterName)
}

// setTopLevelError sets the ErrorCode every controller-only API's
// response carries at its top.
func setTopLevelError(resp kmsg.Response, code int16) {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	if f := v.Elem().FieldByName("ErrorCode"); f.IsValid() && f.CanSet() && f.Kind() == reflect.Int16 {
		f.SetInt(int64(code))
	}
}

// aclAlterRefusal is what CreateAcls and DeleteAcls check before deciding:
// an authorizer is configured (SECURITY_DISABLED otherwise, as Kafka) and
// the caller may ALTER the cluster. A refusal is the code and message every
// entry of the answer carries; nil means go on.
func aclAlterRefusal(s *Server, r *Request, api string) (*kerr.Error, string) {
	if _, on := s.authorizer(); !on {
		return kerr.SecurityDisabled, "no authorizer is configured (authorizer.class.name)"
	}
	if !s.allowedCluster(r, authz.OpAlter) {
		return kerr.ClusterAuthorizationFailed, api + " needs ALTER on the cluster"
	}
	return nil, ""
}
