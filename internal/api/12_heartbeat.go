package api

// Heartbeat: versions 0-4. v3+ carries group.instance.id. The answer's
// error tells a member to rejoin (REBALANCE_IN_PROGRESS) or that it was
// removed (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/group"
)

func init() {
	register(Spec{Key: 12, MinVersion: 0, MaxVersion: 4, Handle: handleHeartbeat})
}

func handleHeartbeat(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if !s.allowed(r, authz.OpRead, authz.ResourceGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		respond(resp)
		return
	}
	resp.ErrorCode = ErrorCode(s.Backend.Groups().Heartbeat(group.HeartbeatRequest{
		GroupID:    req.Group,
		MemberID:   req.MemberID,
		InstanceID: deref(req.InstanceID),
		Generation: req.Generation,
	}))
	respond(resp)
}
