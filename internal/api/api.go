// Package api holds one file per Kafka API key. Each file opens with the
// versions it serves and registers its handler in the table that
// ApiVersions is built from, so what we advertise is exactly what we handle.
//
// Handlers are thin: they validate the request, call the domain through
// Backend, and fill in error codes. They never block: a handler that has to
// wait (acks=all, Fetch long polls) hands a completion callback to the
// domain and returns.
package api

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"log/slog"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/bufpool"
)

// Respond delivers the response to a request. It is called exactly once,
// possibly from another goroutine. A nil response means "send nothing"
// (acks=0 produce).
type Respond func(kmsg.Response)

// Request is one decoded request with what a handler needs to know about
// who sent it.
type Request struct {
	Version  int16
	ClientID string
	Host     string // the client's address, for logs and group membership
	Listener string // the listener the request arrived on; Metadata answers with its endpoints
	// SASL is the connection's authentication on a SASL listener, for
	// SaslHandshake and SaslAuthenticate; nil elsewhere.
	SASL SASLSession
	// ControllerListener is set for requests on a controller listener.
	ControllerListener bool
	// Conn identifies the connection, for the controller's liveness
	// tracking of brokers.
	Conn ConnID
	// CloseConn closes the client's connection (after earlier answers).
	// An acks=0 produce that fails has no answer to carry the error, so
	// Kafka closes the connection: the client notices and refreshes its
	// metadata instead of writing into the void.
	CloseConn func()
	// Recycle, when set, takes a hold of a buffer from internal/bufpool
	// that this request's answer refers to (a fetch answer's records);
	// the connection releases it once the answer is written. It is
	// called before the answer is given. Nil: the runtime pools nothing
	// for its answers.
	Recycle func(buf *bufpool.Ref)
	// Principal is who the connection authenticated as: User:<name>
	// after SASL, User:<subject> from a verified TLS client certificate,
	// User:ANONYMOUS on a client listener without authentication, BrokerPrincipal on
	// the controller and dedicated inter-broker listeners, and zero for
	// requests a node makes of its own handlers (allowed everything).
	Principal Principal
	Body      kmsg.Request
}

// Handler serves one API key.
type Handler func(s *Server, r *Request, respond Respond)

// Spec describes one API key we serve.
type Spec struct {
	Key        int16
	MinVersion int16
	MaxVersion int16
	Handle     Handler
	// Blocking marks handlers that wait for a metadata commit (admin
	// requests). The connection runs them on their own goroutine so the
	// reader keeps reading; answers still go out in request order.
	Blocking bool
	// ControllerOnly APIs (broker registration, heartbeats, ISR changes)
	// are served on controller listeners only and not advertised to
	// clients.
	ControllerOnly bool
	// Forwardable admin requests are sent on to the active controller
	// when this node is not it (KIP-590's forwarding, without the
	// envelope: the request itself travels).
	Forwardable bool
	// ForControllers marks the few client-side APIs controller listeners
	// serve too: ApiVersions, Fetch for the metadata log, and SASL.
	ForControllers bool
	// Preprocess, for a Forwardable request, answers on the node that
	// received it the parts only that node can judge (Kafka's
	// ConfigAdminManager.preprocess: config resources of a broker): it
	// takes them out of the request and returns merge, which puts their
	// answers into the answer to the rest (nil: nothing answered here),
	// and whether anything is left to forward or handle. A request a
	// broker forwarded was preprocessed by that broker.
	Preprocess func(s *Server, r *Request) (merge func(kmsg.Response), rest bool)
}

// registry is filled by the init functions of the per-key files.
var registry = map[int16]Spec{}

func register(s Spec) {
	if _, dup := registry[s.Key]; dup {
		panic("api: key registered twice: " + kmsg.NameForKey(s.Key))
	}
	// Never advertise a version our codec cannot decode.
	if max := kmsg.RequestForKey(s.Key).MaxVersion(); s.MaxVersion > max {
		s.MaxVersion = max
	}
	registry[s.Key] = s
}

// Lookup returns the spec for a key.
func Lookup(key int16) (Spec, bool) {
	s, ok := registry[key]
	return s, ok
}

// ServedOn says whether a key is served on a listener of this kind, by a
// node with or without the broker role. A controller listener serves what
// KRaft's controller listeners serve, on a controller-only node and on a
// combined broker and controller alike: the controller APIs, forwarded
// admin requests and the ForControllers keys (ApiVersions, the metadata
// log's Fetch, SASL). Client APIs (Metadata, Produce, groups) are served
// on the other listeners of a node with the broker role only; Kafka closes
// a connection that sends them to a controller listener, and clients that
// reach a controller port by mistake must see that, not a working broker
// (kafka-go's TestErrorCannotConnect expects localhost:9093, Kafka's
// controller port in its quickstart, to refuse a consumer).
func (s Spec) ServedOn(controllerListener, brokerRole bool) bool {
	if controllerListener {
		return s.ControllerOnly || s.Forwardable || s.ForControllers
	}
	return brokerRole && !s.ControllerOnly
}

// Specs lists every served API, sorted by key.
func Specs() []Spec {
	out := make([]Spec, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Server dispatches decoded requests to handlers.
type Server struct {
	Backend Backend
	Log     *slog.Logger
	// OnDenied, if set, counts an authorization denial.
	OnDenied func(authz.ResourceType)
	// order keeps a producer's transactional appends in request order
	// while some wait for their coordinator (append_order.go).
	order appendOrder
}

// Serve runs the handler for a request whose version was already checked
// against the registry.
func (s *Server) Serve(r *Request, respond Respond) {
	spec, ok := registry[r.Body.Key()]
	if !ok {
		// The connection layer rejects unknown keys before decoding; this
		// is a programming error, not bad input.
		panic("api: no handler for key " + kmsg.NameForKey(r.Body.Key()))
	}
	forwarded := false
	if spec.Forwardable && r.Principal == BrokerPrincipal {
		// Only admin requests are forwarded, and only by brokers.
		forwarded = takeForwardedPrincipal(r)
	}
	if spec.Preprocess != nil && !forwarded {
		merge, rest := spec.Preprocess(s, r)
		if merge != nil {
			answer := respond
			respond = func(resp kmsg.Response) {
				merge(resp)
				answer(resp)
			}
		}
		if !rest {
			respond(r.Body.ResponseKind())
			return
		}
	}
	if spec.Forwardable && !s.Backend.IsActiveController() {
		// Only the active controller decides metadata changes; it
		// authorizes the client, whose principal travels with the
		// request.
		tagForwardedPrincipal(r, s.Backend.NodeID())
		s.Backend.Forward(r, respond)
		return
	}
	if spec.ControllerOnly && !s.allowedCluster(r, authz.OpClusterAction) {
		// Only brokers and controllers speak the controller APIs.
		resp := r.Body.ResponseKind()
		setTopLevelError(resp, kerr.ClusterAuthorizationFailed.Code)
		respond(resp)
		return
	}
	spec.Handle(s, r, respond)
}
