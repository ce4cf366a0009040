package api

// FindCoordinator: versions 0-6. v0 names one group; v1-v3 add the key
// type; v4+ carry a list of keys and answer one coordinator per key. Key
// type 0 is a group: its coordinator is the leader of the group's
// __consumer_offsets partition; key type 1 is a transactional id, whose
// coordinator is the leader of its __transaction_state partition. The
// first request of each type creates its topic, as Kafka does.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/metadata"
)

func init() {
	register(Spec{Key: 10, MinVersion: 0, MaxVersion: 6, Handle: handleFindCoordinator})
}

const (
	coordinatorTypeGroup       = 0
	coordinatorTypeTransaction = 1
)

// maxCoordinatorKeys bounds one batched request.
const maxCoordinatorKeys = 10_000

func handleFindCoordinator(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.FindCoordinatorRequest)
	keys := req.CoordinatorKeys
	if r.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	answer := func(err error) {
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		im := s.Backend.Image()
		for i, key := range keys {
			c := findCoordinator(im, r.Listener, req.CoordinatorType, key, len(keys) > maxCoordinatorKeys, err)
			if !s.coordinatorKeyAllowed(r, req.CoordinatorType, key) {
				c = kmsg.NewFindCoordinatorResponseCoordinator()
				c.Key, c.NodeID, c.Port = key, -1, -1
				c.ErrorCode = coordinatorDeniedCode(req.CoordinatorType)
			}
			if r.Version < 4 {
				resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
				resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
				break
			}
			if i == maxCoordinatorKeys {
				break
			}
			resp.Coordinators = append(resp.Coordinators, c)
		}
		respond(resp)
	}
	switch req.CoordinatorType {
	case coordinatorTypeGroup:
		s.Backend.Groups().EnsureOffsetsTopic(answer)
	case coordinatorTypeTransaction:
		s.Backend.Txns().EnsureTransactionTopic(answer)
	default:
		answer(nil)
	}
}

// findCoordinator answers one key. createErr is the outcome of creating
// __consumer_offsets.
func findCoordinator(im *metadata.Image, listener string, keyType int8, key string, tooMany bool, createErr error) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	fail := func(err error) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode, c.ErrorMessage = ErrorCode(err), ErrorMessage(err)
		return c
	}
	topic := OffsetsTopic
	switch {
	case keyType != coordinatorTypeGroup && keyType != coordinatorTypeTransaction:
		return fail(fmt.Errorf("%w: unknown coordinator key type %d", kerr.InvalidRequest, keyType))
	case tooMany:
		return fail(fmt.Errorf("%w: more than %d coordinator keys in one request", kerr.InvalidRequest, maxCoordinatorKeys))
	case key == "" && keyType == coordinatorTypeGroup:
		return fail(fmt.Errorf("%w: empty group id", kerr.InvalidGroupID))
	case key == "":
		return fail(fmt.Errorf("%w: empty transactional id", kerr.InvalidRequest))
	case createErr != nil:
		return fail(createErr)
	}
	if keyType == coordinatorTypeTransaction {
		topic = TransactionStateTopic
	}
	t, ok := im.Topic(topic)
	if !ok || len(t.Partitions) == 0 {
		return fail(fmt.Errorf("%w: %s does not exist yet", kerr.CoordinatorNotAvailable, topic))
	}
	// Kafka hashes groups and transactional ids alike.
	p := t.Partitions[group.PartitionFor(key, int32(len(t.Partitions)))]
	b, ok := im.Broker(p.Leader)
	if p.Leader < 0 || !ok || b.Fenced {
		return fail(fmt.Errorf("%w: partition %d of %s has no leader", kerr.CoordinatorNotAvailable, p.Index, topic))
	}
	ep, ok := endpointFor(b, listener)
	if !ok {
		return fail(fmt.Errorf("%w: broker %d has no endpoint", kerr.CoordinatorNotAvailable, p.Leader))
	}
	c.NodeID, c.Host, c.Port = p.Leader, ep.Host, ep.Port
	return c
}

// coordinatorKeyAllowed: finding a coordinator needs DESCRIBE on the group
// (or transactional id) it is for.
func (s *Server) coordinatorKeyAllowed(r *Request, keyType int8, key string) bool {
	switch keyType {
	case coordinatorTypeGroup:
		return s.allowed(r, authz.OpDescribe, authz.ResourceGroup, key)
	case coordinatorTypeTransaction:
		return s.allowed(r, authz.OpDescribe, authz.ResourceTransactionalID, key)
	}
	return true
}

func coordinatorDeniedCode(keyType int8) int16 {
	if keyType == coordinatorTypeTransaction {
		return kerr.TransactionalIDAuthorizationFailed.Code
	}
	return kerr.GroupAuthorizationFailed.Code
}
