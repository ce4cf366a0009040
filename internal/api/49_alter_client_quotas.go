package api

// AlterClientQuotas: versions 0-1 (KIP-546). Sets or removes
// producer_byte_rate, consumer_byte_rate and request_percentage of user,
// client-id and default entities and their combinations. Each entry is
// checked on its own (INVALID_REQUEST with the reason); the changes of
// all valid entries are committed together as ClientQuota metadata
// records, unless validate_only. Forwarded to the active controller.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/metadata"
)

func init() {
	register(Spec{Key: 49, MinVersion: 0, MaxVersion: 1, Handle: handleAlterClientQuotas, Blocking: true, Forwardable: true})
}

func handleAlterClientQuotas(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	im := s.Backend.Image()
	// Kafka asks ALTER_CONFIGS on the cluster.
	denied := !s.allowedCluster(r, authz.OpAlterConfigs)
	var recs []metadata.Record
	var committed []int // indexes of entries whose records are in recs
	for _, en := range req.Entries {
		out := kmsg.NewAlterClientQuotasResponseEntry()
		parts := make([]metadata.QuotaEntityPart, 0, len(en.Entity))
		for _, e := range en.Entity {
			parts = append(parts, metadata.QuotaEntityPart{Type: e.Type, Name: e.Name})
			oe := kmsg.NewAlterClientQuotasResponseEntryEntity()
			oe.Type, oe.Name = e.Type, e.Name
			out.Entity = append(out.Entity, oe)
		}
		ops := make([]controller.QuotaOp, 0, len(en.Ops))
		for _, op := range en.Ops {
			ops = append(ops, controller.QuotaOp{Key: op.Key, Value: op.Value, Remove: op.Remove})
		}
		entryRecs, err := controller.AlterClientQuota(im, parts, ops)
		if denied {
			out.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		} else if err != nil {
			out.ErrorCode, out.ErrorMessage = ErrorCode(err), ErrorMessage(err)
		} else {
			recs = append(recs, entryRecs...)
			committed = append(committed, len(resp.Entries))
		}
		resp.Entries = append(resp.Entries, out)
	}
	if !req.ValidateOnly && len(recs) > 0 {
		if err := s.Backend.Commit(recs); err != nil {
			for _, i := range committed {
				resp.Entries[i].ErrorCode, resp.Entries[i].ErrorMessage = ErrorCode(err), ErrorMessage(err)
			}
		}
	}
	respond(resp)
}
