package api

// DeleteGroups: versions 0-2. Only empty groups can be deleted
// (NON_EMPTY_GROUP otherwise); their offsets and metadata get tombstones in
// __consumer_offsets, and the answer waits until those are committed. Each
// group is deleted by its coordinator, which must be this broker.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
)

func init() {
	register(Spec{Key: 42, MinVersion: 0, MaxVersion: 2, Handle: handleDeleteGroups})
}

// maxDeleteGroups bounds one request.
const maxDeleteGroups = 10_000

func handleDeleteGroups(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	answer := func(errs []error) {
		for i, id := range req.Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group = id
			if i < len(errs) {
				rg.ErrorCode = ErrorCode(errs[i])
			} else {
				rg.ErrorCode = kerr.InvalidRequest.Code
			}
			resp.Groups = append(resp.Groups, rg)
		}
		respond(resp)
	}
	if len(req.Groups) > maxDeleteGroups {
		answer(nil)
		return
	}
	// Groups the principal may not DELETE are answered here; the others
	// go to the coordinator, and their answers are put back in order.
	var allowed []string
	denied := make([]bool, len(req.Groups))
	for i, id := range req.Groups {
		if denied[i] = !s.allowed(r, authz.OpDelete, authz.ResourceGroup, id); !denied[i] {
			allowed = append(allowed, id)
		}
	}
	s.Backend.Groups().DeleteGroups(allowed, func(errs []error) {
		all := make([]error, len(req.Groups))
		next := 0
		for i := range req.Groups {
			switch {
			case denied[i]:
				all[i] = kerr.GroupAuthorizationFailed
			case next < len(errs):
				all[i] = errs[next]
				next++
			default:
				all[i] = kerr.InvalidRequest
			}
		}
		answer(all)
	})
}
