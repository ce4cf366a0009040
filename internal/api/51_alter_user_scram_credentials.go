package api

// AlterUserScramCredentials: version 0 (flexible), KIP-554. Decided by the
// active controller (forwarded like other admin requests) and stored as
// replicated metadata records. Upsertions carry the salt and the salted
// password the client computed; the broker keeps only the derived keys.
// Needs ALTER on the cluster.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/controller"
)

func init() {
	register(Spec{Key: 51, MinVersion: 0, MaxVersion: 0, Handle: handleAlterUserScramCredentials, Blocking: true, Forwardable: true})
}

func handleAlterUserScramCredentials(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	dels := make([]controller.ScramDeletion, len(req.Deletions))
	for i, d := range req.Deletions {
		dels[i] = controller.ScramDeletion{Name: d.Name, Mechanism: scramMechanismOf(d.Mechanism)}
	}
	ups := make([]controller.ScramUpsertion, len(req.Upsertions))
	for i, u := range req.Upsertions {
		ups[i] = controller.ScramUpsertion{Name: u.Name, Mechanism: scramMechanismOf(u.Mechanism),
			Iterations: u.Iterations, Salt: u.Salt, SaltedPassword: u.SaltedPassword}
	}
	recs, results := controller.AlterScramCredentials(s.Backend.Image(), dels, ups)
	if !s.allowedCluster(r, authz.OpAlter) {
		// Kafka answers every user of the request with the refusal.
		for _, res := range results {
			out := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			out.User, out.ErrorCode = res.User, kerr.ClusterAuthorizationFailed.Code
			out.ErrorMessage = kmsg.StringPtr("AlterUserScramCredentials needs ALTER on the cluster")
			resp.Results = append(resp.Results, out)
		}
		respond(resp)
		return
	}
	var commitErr error
	if len(recs) > 0 {
		commitErr = s.Backend.Commit(recs)
	}
	for _, res := range results {
		err := res.Err
		if err == nil {
			err = commitErr
		}
		out := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		out.User, out.ErrorCode, out.ErrorMessage = res.User, ErrorCode(err), ErrorMessage(err)
		resp.Results = append(resp.Results, out)
	}
	respond(resp)
}
