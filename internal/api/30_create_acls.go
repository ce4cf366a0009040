package api

// CreateAcls: versions 0-3 (v1+ carries the pattern type, v2+ is
// flexible). Decided by the active controller (forwarded like other admin
// requests) and stored as replicated metadata records. Needs ALTER on the
// cluster.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/controller"
)

func init() {
	register(Spec{Key: 30, MinVersion: 0, MaxVersion: 3, Handle: handleCreateACLs, Blocking: true, Forwardable: true})
}

func handleCreateACLs(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	failAll := func(code *kerr.Error, msg string) {
		for range req.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code.Code, kmsg.StringPtr(msg)
			resp.Results = append(resp.Results, res)
		}
		respond(resp)
	}
	if code, msg := aclAlterRefusal(s, r, "CreateAcls"); code != nil {
		failAll(code, msg)
		return
	}
	acls := make([]authz.ACL, len(req.Creations))
	for i, c := range req.Creations {
		acls[i] = authz.ACL{
			ID:           s.Backend.NewTopicID().String(),
			ResourceType: authz.ResourceType(c.ResourceType), ResourceName: c.ResourceName,
			PatternType: aclPatternOf(req.Version, authz.PatternType(c.ResourcePatternType)),
			Principal:   c.Principal, Host: c.Host,
			Operation: authz.Operation(c.Operation), Permission: authz.Permission(c.PermissionType),
		}
	}
	recs, errs := controller.CreateACLs(s.Backend.Image(), acls)
	var commitErr error
	if len(recs) > 0 {
		commitErr = s.Backend.Commit(recs)
	}
	for _, err := range errs {
		if err == nil {
			err = commitErr
		}
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = ErrorCode(err), ErrorMessage(err)
		resp.Results = append(resp.Results, res)
	}
	respond(resp)
}
