package api

// ListGroups: versions 0-4. Lists the groups of every coordinator on this
// broker (a client asks each broker and merges). v4 filters by state
// (KIP-518); state names match case-insensitively, as in Kafka, and an
// unknown name matches nothing. While a coordinator here is still loading,
// the answer carries COORDINATOR_LOAD_IN_PROGRESS with the groups of the
// others.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/group"
)

func init() {
	register(Spec{Key: 16, MinVersion: 0, MaxVersion: 4, Handle: handleListGroups})
}

var groupStates = []group.State{group.Empty, group.PreparingRebalance, group.CompletingRebalance, group.Stable, group.Dead}

func handleListGroups(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	states, matchNone := parseGroupStates(req.StatesFilter)
	if matchNone {
		respond(resp)
		return
	}
	groups, err := s.Backend.Groups().ListGroups(states)
	resp.ErrorCode = ErrorCode(err)
	// DESCRIBE on the cluster lists every group; otherwise only the
	// groups the principal may DESCRIBE, as Kafka filters them.
	all := s.allowedQuiet(r, authz.OpDescribe, authz.ResourceCluster, authz.ClusterName)
	for _, g := range groups {
		if !all && !s.allowedQuiet(r, authz.OpDescribe, authz.ResourceGroup, g.GroupID) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState = g.GroupID, g.ProtocolType, g.State.String()
		resp.Groups = append(resp.Groups, rg)
	}
	respond(resp)
}

// parseGroupStates maps a states filter onto states; matchNone is set when
// the filter names only states that do not exist.
func parseGroupStates(names []string) (states []group.State, matchNone bool) {
	for _, n := range names {
		for _, st := range groupStates {
			if strings.EqualFold(n, st.String()) {
				states = append(states, st)
			}
		}
	}
	return states, len(names) > 0 && len(states) == 0
}
