package api

// LeaveGroup: versions 0-5. v0-v2 name one member; v3+ a batch of members,
// each by member id or by group.instance.id (KIP-345), answered one by
// one. v5 adds a reason, which we accept and ignore.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/group"
)

func init() {
	register(Spec{Key: 13, MinVersion: 0, MaxVersion: 5, Handle: handleLeaveGroup})
}

// maxLeavingMembers bounds one batched LeaveGroup.
const maxLeavingMembers = 10_000

func handleLeaveGroup(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if !s.allowed(r, authz.OpRead, authz.ResourceGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		respond(resp)
		return
	}
	lr := group.LeaveRequest{GroupID: req.Group}
	if r.Version < 3 {
		lr.Members = []group.LeavingMember{{MemberID: req.MemberID}}
	} else {
		if len(req.Members) > maxLeavingMembers {
			resp.ErrorCode = kerr.InvalidRequest.Code
			respond(resp)
			return
		}
		for _, m := range req.Members {
			lr.Members = append(lr.Members, group.LeavingMember{MemberID: m.MemberID, InstanceID: deref(m.InstanceID)})
		}
	}
	s.Backend.Groups().Leave(lr, func(res group.LeaveResponse) {
		resp.ErrorCode = ErrorCode(res.Err)
		if r.Version < 3 {
			// One member: its outcome is the request's.
			if res.Err == nil && len(res.Members) == 1 {
				resp.ErrorCode = ErrorCode(res.Members[0])
			}
			respond(resp)
			return
		}
		if res.Err == nil {
			for i, m := range req.Members {
				rm := kmsg.NewLeaveGroupResponseMember()
				rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
				if i < len(res.Members) {
					rm.ErrorCode = ErrorCode(res.Members[i])
				}
				resp.Members = append(resp.Members, rm)
			}
		}
		respond(resp)
	})
}
