package api

// BrokerRegistration: versions 0-4, controller listener only. A broker
// announces itself (id, endpoints, rack) to the active controller, which
// commits a registration with a new broker epoch. The cluster id must
// match: a broker of another cluster is refused.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 62, MinVersion: 0, MaxVersion: 4, Handle: handleBrokerRegistration, ControllerOnly: true})
}

func handleBrokerRegistration(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.BrokerRegistrationRequest)
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	s.Backend.Controller().RegisterBroker(req, r.Conn, func(epoch int64, err error) {
		resp.ErrorCode = ErrorCode(err)
		resp.BrokerEpoch = epoch
		if err != nil {
			resp.BrokerEpoch = -1
			if resp.ErrorCode == kerr.InconsistentClusterID.Code {
				// Tell the refused node which cluster this is.
				TagClusterID(&resp.UnknownTags, s.Backend.Image().ClusterID())
			}
			s.Log.Warn("broker registration refused", "broker", req.BrokerID, "err", err)
		}
		respond(resp)
	})
}
