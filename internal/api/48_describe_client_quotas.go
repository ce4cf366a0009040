package api

// DescribeClientQuotas: versions 0-1 (KIP-546). Answered from this
// broker's metadata image, as KRaft brokers do: the quotas are replicated
// metadata, so any broker knows them. A filter component matches an
// entity by exact name (0), the type's default (1) or any name including
// the default (2); strict filters match only entities with no other
// component.

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/metadata"
)

func init() {
	register(Spec{Key: 48, MinVersion: 0, MaxVersion: 1, Handle: handleDescribeClientQuotas})
}

// Kafka's match types.
const (
	quotaMatchExact   = 0
	quotaMatchDefault = 1
	quotaMatchAny     = 2
)

func handleDescribeClientQuotas(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	// Kafka asks DESCRIBE_CONFIGS on the cluster.
	if !s.allowedCluster(r, authz.OpDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		respond(resp)
		return
	}
	entries, err := describeClientQuotas(s.Backend.Image(), req.Components, req.Strict)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = ErrorCode(err), ErrorMessage(err)
		respond(resp)
		return
	}
	resp.Entries = entries
	respond(resp)
}

func describeClientQuotas(im *metadata.Image, components []kmsg.DescribeClientQuotasRequestComponent, strict bool) ([]kmsg.DescribeClientQuotasResponseEntry, error) {
	seen := map[string]bool{}
	for _, c := range components {
		if seen[c.EntityType] {
			return nil, fmt.Errorf("%w: entity type %q given twice in the filter", kerr.InvalidRequest, c.EntityType)
		}
		seen[c.EntityType] = true
		if c.EntityType != metadata.QuotaEntityUser && c.EntityType != metadata.QuotaEntityClientID && c.EntityType != "ip" {
			return nil, fmt.Errorf("%w: unknown quota entity type %q (user, client-id or ip)", kerr.InvalidRequest, c.EntityType)
		}
		switch c.MatchType {
		case quotaMatchExact:
			if c.Match == nil {
				return nil, fmt.Errorf("%w: an exact match on %s needs a name", kerr.InvalidRequest, c.EntityType)
			}
		case quotaMatchDefault, quotaMatchAny:
			if c.Match != nil {
				return nil, fmt.Errorf("%w: a default or any match on %s takes no name", kerr.InvalidRequest, c.EntityType)
			}
		default:
			return nil, fmt.Errorf("%w: unknown match type %d", kerr.InvalidRequest, c.MatchType)
		}
	}
	var out []kmsg.DescribeClientQuotasResponseEntry
	for _, q := range im.ClientQuotas() {
		if !quotaFilterMatches(q.Entity, components, strict) {
			continue
		}
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range q.Entity.Parts() {
			ee := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = p.Type, p.Name
			e.Entity = append(e.Entity, ee)
		}
		for _, k := range slices.SortedFunc(maps.Keys(q.Values), cmp.Compare) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, q.Values[k]
			e.Values = append(e.Values, v)
		}
		out = append(out, e)
	}
	return out, nil
}

func quotaFilterMatches(e metadata.QuotaEntity, components []kmsg.DescribeClientQuotasRequestComponent, strict bool) bool {
	side := func(typ string) metadata.QuotaName {
		switch typ {
		case metadata.QuotaEntityUser:
			return e.User
		case metadata.QuotaEntityClientID:
			return e.ClientID
		}
		return metadata.QuotaName{} // ip: Skein stores no ip quotas
	}
	named := 0
	for _, c := range components {
		n := side(c.EntityType)
		if !n.Set {
			return false
		}
		named++
		switch c.MatchType {
		case quotaMatchExact:
			if n.Default || n.Name != *c.Match {
				return false
			}
		case quotaMatchDefault:
			if !n.Default {
				return false
			}
		}
	}
	if strict {
		total := 0
		if e.User.Set {
			total++
		}
		if e.ClientID.Set {
			total++
		}
		return total == named
	}
	return true
}
