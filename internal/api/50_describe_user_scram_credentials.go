package api

// DescribeUserScramCredentials: version 0 (flexible), KIP-554. Served
// from this broker's image, which holds the replicated credential records;
// only the mechanisms and iteration counts are answered, never a key.
// Needs DESCRIBE on the cluster.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/metadata"
)

func init() {
	register(Spec{Key: 50, MinVersion: 0, MaxVersion: 0, Handle: handleDescribeUserScramCredentials})
}

func handleDescribeUserScramCredentials(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !s.allowedCluster(r, authz.OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr("DescribeUserScramCredentials needs DESCRIBE on the cluster")
		respond(resp)
		return
	}
	byUser := map[string][]metadata.UserScramCredential{}
	var all []string
	for _, c := range s.Backend.Image().ScramCredentials() {
		if _, ok := byUser[c.Name]; !ok {
			all = append(all, c.Name)
		}
		byUser[c.Name] = append(byUser[c.Name], c)
	}
	result := func(user string) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = user
		creds, ok := byUser[user]
		if !ok {
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist")
			return res
		}
		for _, c := range creds {
			info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			info.Mechanism, info.Iterations = scramMechanismCode(c.Mechanism), c.Iterations
			res.CredentialInfos = append(res.CredentialInfos, info)
		}
		return res
	}
	// No users (null or empty) describes every user, as in Kafka.
	if len(req.Users) == 0 {
		for _, u := range all {
			resp.Results = append(resp.Results, result(u))
		}
		respond(resp)
		return
	}
	count := map[string]int{}
	for _, u := range req.Users {
		count[u.Name]++
	}
	answered := map[string]bool{}
	for _, u := range req.Users {
		if answered[u.Name] {
			continue
		}
		answered[u.Name] = true
		if count[u.Name] > 1 {
			res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.User, res.ErrorCode = u.Name, kerr.DuplicateResource.Code
			res.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request")
			resp.Results = append(resp.Results, res)
			continue
		}
		resp.Results = append(resp.Results, result(u.Name))
	}
	respond(resp)
}
