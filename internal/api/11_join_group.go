package api

// JoinGroup: versions 2-9 (clients send v2 at the lowest). v4+ first
// answers MEMBER_ID_REQUIRED with an id to rejoin with (KIP-394); v5+
// carries group.instance.id (static membership, KIP-345); v7+ names the
// protocol type in the answer; v9 lets the leader skip computing an
// assignment (KIP-814). The answer usually waits for the rebalance: the
// coordinator parks the request and answers through respond.

import (
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/group"
)

func init() {
	register(Spec{Key: 11, MinVersion: 2, MaxVersion: 9, Handle: handleJoinGroup})
}

// maxJoinProtocols bounds the protocols one member may offer (clients
// offer a handful of assignors).
const maxJoinProtocols = 64

func handleJoinGroup(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	if !s.allowed(r, authz.OpRead, authz.ResourceGroup, req.Group) {
		resp.ErrorCode, resp.Generation, resp.MemberID = kerr.GroupAuthorizationFailed.Code, -1, req.MemberID
		respond(resp)
		return
	}
	// A join without protocols is the coordinator's to refuse, after it
	// checked the group id and session timeout, as Kafka orders them.
	if len(req.Protocols) > maxJoinProtocols {
		resp.ErrorCode, resp.Generation, resp.MemberID = errInconsistentProtocol, -1, req.MemberID
		respond(resp)
		return
	}
	jr := group.JoinRequest{
		GroupID:                req.Group,
		MemberID:               req.MemberID,
		InstanceID:             deref(req.InstanceID),
		ClientID:               r.ClientID,
		ClientHost:             clientHost(r.Host),
		SessionTimeoutMs:       req.SessionTimeoutMillis,
		RebalanceTimeoutMs:     req.RebalanceTimeoutMillis,
		ProtocolType:           req.ProtocolType,
		RequireKnownMemberID:   r.Version >= 4,
		SupportsSkipAssignment: r.Version >= 9,
	}
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	s.Backend.Groups().Join(jr, func(res group.JoinResponse) {
		resp.ErrorCode = ErrorCode(res.Err)
		resp.Generation = res.Generation
		resp.MemberID = res.MemberID
		resp.LeaderID = res.LeaderID
		resp.SkipAssignment = res.SkipAssignment
		if res.ProtocolType != "" {
			resp.ProtocolType = kmsg.StringPtr(res.ProtocolType)
		}
		if res.ProtocolName != "" {
			resp.Protocol = kmsg.StringPtr(res.ProtocolName)
		}
		for _, m := range res.Members {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID, rm.ProtocolMetadata = m.MemberID, m.Metadata
			if m.InstanceID != "" {
				rm.InstanceID = kmsg.StringPtr(m.InstanceID)
			}
			resp.Members = append(resp.Members, rm)
		}
		respond(resp)
	})
}

// errInconsistentProtocol is Kafka's answer to a join offering more
// protocols than any client does.
var errInconsistentProtocol = kerr.InconsistentGroupProtocol.Code

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// clientHost is the client's address as Kafka shows it in DescribeGroups:
// "/" and the IP, without the port.
func clientHost(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return "/" + host
	}
	return "/" + addr
}
