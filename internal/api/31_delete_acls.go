package api

// DeleteAcls: versions 0-3 (v1+ carries the pattern type, v2+ is
// flexible). Each filter removes every ACL it matches (ANY and MATCH as in
// DescribeAcls) and lists them. Decided by the active controller; needs
// ALTER on the cluster.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/controller"
)

func init() {
	register(Spec{Key: 31, MinVersion: 0, MaxVersion: 3, Handle: handleDeleteACLs, Blocking: true, Forwardable: true})
}

func handleDeleteACLs(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	failAll := func(code *kerr.Error, msg string) {
		for range req.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code.Code, kmsg.StringPtr(msg)
			resp.Results = append(resp.Results, res)
		}
		respond(resp)
	}
	if code, msg := aclAlterRefusal(s, r, "DeleteAcls"); code != nil {
		failAll(code, msg)
		return
	}
	filters := make([]authz.Filter, len(req.Filters))
	for i, f := range req.Filters {
		filters[i] = authz.Filter{
			ResourceType: authz.ResourceType(f.ResourceType), ResourceName: f.ResourceName,
			PatternType: aclPatternOf(req.Version, authz.PatternType(f.ResourcePatternType)),
			Principal:   f.Principal, Host: f.Host,
			Operation: authz.Operation(f.Operation), Permission: authz.Permission(f.PermissionType),
		}
	}
	recs, matched, errs := controller.DeleteACLs(s.Backend.Image(), filters)
	var commitErr error
	if len(recs) > 0 {
		commitErr = s.Backend.Commit(recs)
	}
	for i, err := range errs {
		res := kmsg.NewDeleteACLsResponseResult()
		if err == nil {
			err = commitErr
		}
		res.ErrorCode, res.ErrorMessage = ErrorCode(err), ErrorMessage(err)
		if err == nil {
			for _, a := range matched[i] {
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType = kmsg.ACLResourceType(a.ResourceType)
				m.ResourceName = a.ResourceName
				m.ResourcePatternType = kmsg.ACLResourcePatternType(a.PatternType)
				m.Principal, m.Host = a.Principal, a.Host
				m.Operation = kmsg.ACLOperation(a.Operation)
				m.PermissionType = kmsg.ACLPermissionType(a.Permission)
				res.MatchingACLs = append(res.MatchingACLs, m)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	respond(resp)
}
