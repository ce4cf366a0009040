package api

// SyncGroup: versions 0-5. The leader sends the assignment, every member
// gets its own share; v3+ carries group.instance.id; v5 names the protocol
// type and name, which must match the group's. Members other than the
// leader usually wait (parked) until the leader's assignment arrives.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/group"
)

func init() {
	register(Spec{Key: 14, MinVersion: 0, MaxVersion: 5, Handle: handleSyncGroup})
}

func handleSyncGroup(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	if !s.allowed(r, authz.OpRead, authz.ResourceGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		respond(resp)
		return
	}
	sr := group.SyncRequest{
		GroupID:      req.Group,
		MemberID:     req.MemberID,
		InstanceID:   deref(req.InstanceID),
		Generation:   req.Generation,
		ProtocolType: deref(req.ProtocolType),
		ProtocolName: deref(req.Protocol),
	}
	for _, a := range req.GroupAssignment {
		sr.Assignments = append(sr.Assignments, group.Assignment{MemberID: a.MemberID, Assignment: a.MemberAssignment})
	}
	s.Backend.Groups().Sync(sr, func(res group.SyncResponse) {
		resp.ErrorCode = ErrorCode(res.Err)
		resp.MemberAssignment = res.Assignment
		if res.ProtocolType != "" {
			resp.ProtocolType = kmsg.StringPtr(res.ProtocolType)
		}
		if res.ProtocolName != "" {
			resp.Protocol = kmsg.StringPtr(res.ProtocolName)
		}
		respond(resp)
	})
}
