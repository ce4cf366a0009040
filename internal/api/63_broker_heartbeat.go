package api

// BrokerHeartbeat: versions 0-2, controller listener only. Heartbeats keep
// a broker's session alive; the answer says whether it is fenced and, once
// it asked to shut down, whether it may (its leaderships have moved).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 63, MinVersion: 0, MaxVersion: 2, Handle: handleBrokerHeartbeat, ControllerOnly: true})
}

func handleBrokerHeartbeat(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.BrokerHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	s.Backend.Controller().BrokerHeartbeat(req, r.Conn, func(res BrokerHeartbeatResult, err error) {
		resp.ErrorCode = ErrorCode(err)
		resp.IsCaughtUp = res.IsCaughtUp
		resp.IsFenced = res.IsFenced
		resp.ShouldShutdown = res.ShouldShutdown
		respond(resp)
	})
}
