package api

// DeleteGroups: versions 0-2. Only empty groups can be deleted
// (NON_EMPTY_GROUP otherwise); their offsets and metadata get tombstones in
// __consumer_offsets, and the answer waits until those are committed. Each
// group is deleted by its coordinator, which must be this broker.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	s.Backend.Groups().DeleteGroups(req.Groups, answer)
}
