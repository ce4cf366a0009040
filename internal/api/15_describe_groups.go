package api

// DescribeGroups: versions 0-5. Each group is described by its
// coordinator, which must be this broker (others get NOT_COORDINATOR). An
// unknown group is Dead with no members, as in Kafka. v3+ may ask for the
// authorized operations (authorizedOperations); v4+ shows
// group.instance.id.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
)

func init() {
	register(Spec{Key: 15, MinVersion: 0, MaxVersion: 5, Handle: handleDescribeGroups})
}

// maxDescribeGroups bounds one request.
const maxDescribeGroups = 10_000

// operationsNotRequested is Kafka's INT32_MIN for "not asked for".
const operationsNotRequested = -1 << 31

func handleDescribeGroups(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for i, id := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		rg.AuthorizedOperations = operationsNotRequested
		if !s.allowed(r, authz.OpDescribe, authz.ResourceGroup, id) {
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if req.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = s.authorizedOperations(r, authz.ResourceGroup, id)
		}
		if i >= maxDescribeGroups {
			rg.ErrorCode = kerr.InvalidRequest.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if id == "" {
			rg.ErrorCode = kerr.InvalidGroupID.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		d, err := s.Backend.Groups().DescribeGroup(id)
		rg.ErrorCode = ErrorCode(err)
		rg.State = d.State.String()
		rg.ProtocolType = d.ProtocolType
		rg.Protocol = d.Protocol
		for _, m := range d.Members {
			rm := kmsg.NewDescribeGroupsResponseGroupMember()
			rm.MemberID, rm.ClientID, rm.ClientHost = m.MemberID, m.ClientID, m.ClientHost
			rm.ProtocolMetadata, rm.MemberAssignment = m.Metadata, m.Assignment
			if m.InstanceID != "" {
				rm.InstanceID = kmsg.StringPtr(m.InstanceID)
			}
			rg.Members = append(rg.Members, rm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	respond(resp)
}
