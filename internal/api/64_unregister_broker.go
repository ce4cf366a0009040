package api

// UnregisterBroker: version 0 (KIP-500, KIP-631). Removes a broker's
// registration. Needs ALTER on the cluster. Decided by the active
// controller (forwarded) at its turn in the decision queue
// (controller.UnregisterBroker): BROKER_ID_NOT_REGISTERED for an unknown
// id, and, Skein's safety rule, INVALID_REQUEST naming the partitions for a
// running (unfenced) broker that is still listed as a replica.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
)

func init() {
	register(Spec{Key: 64, MinVersion: 0, MaxVersion: 0, Handle: handleUnregisterBroker, Blocking: true, Forwardable: true})
}

func handleUnregisterBroker(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.UnregisterBrokerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	var err error
	if !s.allowedCluster(r, authz.OpAlter) {
		err = kerr.ClusterAuthorizationFailed
		resp.ErrorMessage = kmsg.StringPtr("UnregisterBroker needs ALTER on the cluster")
	} else if err = s.Backend.UnregisterBroker(req.BrokerID); err != nil {
		resp.ErrorMessage = ErrorMessage(err)
	}
	resp.ErrorCode = ErrorCode(err)
	respond(resp)
}
