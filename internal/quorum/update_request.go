package quorum

import (
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// UpdateRaftVoterRequest is the UpdateRaftVoter request (KIP-853) that
// asks u.Leader to record this voter's endpoints and supported
// kraft.version range; node and sim send the same request.
func (u VoterUpdate) UpdateRaftVoterRequest(clusterID string) *kmsg.UpdateRaftVoterRequest {
	req := kmsg.NewPtrUpdateRaftVoterRequest()
	req.ClusterID = kmsg.StringPtr(clusterID)
	req.CurrentLeaderEpoch = int32(min(u.Term, math.MaxInt32))
	req.VoterID, req.VoterDirectoryID = u.Member.NodeID, u.Member.DirectoryID
	for _, l := range u.Member.Listeners {
		rl := kmsg.NewUpdateRaftVoterRequestListener()
		rl.Name, rl.Host, rl.Port = l.Name, l.Host, l.Port
		req.Listeners = append(req.Listeners, rl)
	}
	req.KRaftVersionFeature.MinSupportedVersion = SupportedKRaftVersions.Min
	req.KRaftVersionFeature.MaxSupportedVersion = SupportedKRaftVersions.Max
	return req
}
