package api

// CreatePartitions: versions 0-3. Partitions can only be added. ValidateOnly
// checks and commits nothing.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/controller"
)

func init() {
	register(Spec{Key: 37, MinVersion: 0, MaxVersion: 3, Handle: handleCreatePartitions, Blocking: true, Forwardable: true})
}

func handleCreatePartitions(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var assignments [][]int32
		for _, a := range rt.Assignment {
			assignments = append(assignments, a.Replicas)
		}
		if !s.allowed(r, authz.OpAlter, authz.ResourceTopic, rt.Topic) {
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, st)
			continue
		}
		recs, err := controller.CreatePartitions(s.Backend.Image(), rt.Topic, rt.Count, assignments)
		if err == nil && !req.ValidateOnly {
			err = s.Backend.Commit(recs)
		}
		st.ErrorCode = ErrorCode(err)
		st.ErrorMessage = ErrorMessage(err)
		resp.Topics = append(resp.Topics, st)
	}
	respond(resp)
}
