package api

// DescribeAcls: versions 0-3 (v1+ carries the pattern type, v2+ is
// flexible). Served from this broker's image, which holds the replicated
// ACL records. Needs DESCRIBE on the cluster; without an authorizer Kafka
// answers SECURITY_DISABLED.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
)

func init() {
	register(Spec{Key: 29, MinVersion: 0, MaxVersion: 3, Handle: handleDescribeACLs})
}

func handleDescribeACLs(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	fail := func(code *kerr.Error, msg string) {
		resp.ErrorCode = code.Code
		resp.ErrorMessage = kmsg.StringPtr(msg)
		respond(resp)
	}
	if _, on := s.authorizer(); !on {
		fail(kerr.SecurityDisabled, "no authorizer is configured (authorizer.class.name)")
		return
	}
	if !s.allowedCluster(r, authz.OpDescribe) {
		fail(kerr.ClusterAuthorizationFailed, "DescribeAcls needs DESCRIBE on the cluster")
		return
	}
	f := authz.Filter{
		ResourceType: authz.ResourceType(req.ResourceType), ResourceName: req.ResourceName,
		PatternType: aclPatternOf(req.Version, authz.PatternType(req.ResourcePatternType)),
		Principal:   req.Principal, Host: req.Host,
		Operation: authz.Operation(req.Operation), Permission: authz.Permission(req.PermissionType),
	}
	if err := f.Validate(); err != nil {
		fail(kerr.InvalidRequest, err.Error())
		return
	}
	var cur *kmsg.DescribeACLsResponseResource
	// Select returns ACLs ordered by resource, so one pass groups them.
	for _, a := range s.Backend.Image().ACLs().Select(f) {
		if cur == nil || cur.ResourceType != kmsg.ACLResourceType(a.ResourceType) || cur.ResourceName != a.ResourceName ||
			cur.ResourcePatternType != kmsg.ACLResourcePatternType(a.PatternType) {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType = kmsg.ACLResourceType(a.ResourceType)
			res.ResourceName = a.ResourceName
			res.ResourcePatternType = kmsg.ACLResourcePatternType(a.PatternType)
			resp.Resources = append(resp.Resources, res)
			cur = &resp.Resources[len(resp.Resources)-1]
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host = a.Principal, a.Host
		e.Operation = kmsg.ACLOperation(a.Operation)
		e.PermissionType = kmsg.ACLPermissionType(a.Permission)
		cur.ACLs = append(cur.ACLs, e)
	}
	respond(resp)
}

// aclPatternOf reads a request's pattern type: v0 has none and means
// LITERAL, as Kafka reads it.
func aclPatternOf(version int16, p authz.PatternType) authz.PatternType {
	if version == 0 {
		return authz.PatternLiteral
	}
	return p
}
