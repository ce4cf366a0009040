package api

// UpdateFeatures (57, v0-2): finalizes feature levels, decided by the
// active controller (forwarded there). transaction.version (KIP-890 part
// 2, levels 0-2) is a FeatureLevel metadata record; it may go up and, as
// in Kafka, down (a downgrade asked for as one). kraft.version (KIP-853): 0 for a static quorum (controller.quorum.voters),
// 1 when the voters are the quorum log's. Upgrading a static quorum to 1 is
// Kafka 4.1's `kafka-features upgrade --feature kraft.version=1`: it needs
// every voter's directory id and endpoints, which the voters send the
// leader on their own (UpdateRaftVoter); until then, or for a voter that
// does not support 1, it is INVALID_UPDATE_VERSION. A downgrade of
// kraft.version, a level other than 0 and 1, and any other feature name
// are INVALID_UPDATE_VERSION too; one invalid update fails the request
// (nothing is applied). A change in progress is REQUEST_TIMED_OUT, retry.
// v0-1 answer per feature too; v2 with the top-level error only.
//
// ApiVersions (v3+) lists kraft.version among SupportedFeatures (0 to 1)
// and, once at 1, among FinalizedFeatures (a level of 0 is not finalized,
// as KIP-584 has it).

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/quorum"
)

func init() {
	register(Spec{Key: 57, MinVersion: 0, MaxVersion: 2, Handle: handleUpdateFeatures, Blocking: true, Forwardable: true})
	codeMappers = append(codeMappers, featureErrorCode)
}

// KRaftVersionFeature is kraft.version's feature name.
const KRaftVersionFeature = "kraft.version"

// maxFeatureUpdates bounds the updates one request may carry.
const maxFeatureUpdates = 64

// errInvalidUpdateVersion is an update refused as invalid.
var errInvalidUpdateVersion = fmt.Errorf("%w", kerr.InvalidUpdateVersion)

func featureErrorCode(err error) (int16, bool) {
	if errors.Is(err, quorum.ErrUpgradeNotReady) {
		return kerr.InvalidUpdateVersion.Code, true
	}
	return 0, false
}

// Upgrade types of v1+ (Kafka's FeatureUpdate.UpgradeType).
const (
	upgradeTypeUpgrade         int8 = 1
	upgradeTypeSafeDowngrade   int8 = 2
	upgradeTypeUnsafeDowngrade int8 = 3
)

func handleUpdateFeatures(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	answer := func(top error, perFeature []error) {
		resp.ErrorCode, resp.ErrorMessage = ErrorCode(top), ErrorMessage(top)
		// Filled at every version: a forwarded request arrives at v2,
		// and the forwarding broker re-encodes the answer at the
		// client's version, which may list them.
		for i, u := range req.FeatureUpdates {
			res := kmsg.NewUpdateFeaturesResponseResult()
			res.Feature = u.Feature
			if err := perFeature[i]; err != nil {
				res.ErrorCode, res.ErrorMessage = ErrorCode(err), ErrorMessage(err)
			}
			resp.Results = append(resp.Results, res)
		}
		respond(resp)
	}
	if !s.allowedCluster(r, authz.OpAlter) {
		answer(kerr.ClusterAuthorizationFailed, make([]error, len(req.FeatureUpdates)))
		return
	}
	if len(req.FeatureUpdates) > maxFeatureUpdates {
		answer(fmt.Errorf("%w: %d updates, at most %d", kerr.InvalidRequest, len(req.FeatureUpdates), maxFeatureUpdates), make([]error, len(req.FeatureUpdates)))
		return
	}
	kraftCurrent := s.Backend.Quorum().KRaftVersion()
	tvCurrent := s.Backend.Image().TransactionVersion()
	errs := make([]error, len(req.FeatureUpdates))
	upgradeKRaft, invalid := false, error(nil)
	tvTo := int16(-1) // the transaction.version to record, -1 none
	seen := map[string]bool{}
	for i, u := range req.FeatureUpdates {
		downgrade := u.AllowDowngrade
		if req.Version >= 1 {
			downgrade = u.UpgradeType == upgradeTypeSafeDowngrade || u.UpgradeType == upgradeTypeUnsafeDowngrade
		}
		switch {
		case seen[u.Feature]:
			errs[i] = fmt.Errorf("%w: %s is updated twice", kerr.InvalidRequest, u.Feature)
		case u.Feature != KRaftVersionFeature && u.Feature != metadata.TransactionVersionFeature:
			errs[i] = fmt.Errorf("%w: feature %q is not supported (only %s and %s are)", errInvalidUpdateVersion, u.Feature, KRaftVersionFeature, metadata.TransactionVersionFeature)
		case req.Version >= 1 && (u.UpgradeType < upgradeTypeUpgrade || u.UpgradeType > upgradeTypeUnsafeDowngrade):
			errs[i] = fmt.Errorf("%w: upgrade type %d", kerr.InvalidRequest, u.UpgradeType)
		case u.Feature == metadata.TransactionVersionFeature:
			errs[i] = checkLevelChange(u.Feature, tvCurrent, u.MaxVersionLevel, metadata.TransactionVersionMin, metadata.TransactionVersionMax, downgrade, true)
			if errs[i] == nil && u.MaxVersionLevel != tvCurrent {
				tvTo = u.MaxVersionLevel
			}
		default:
			errs[i] = checkLevelChange(u.Feature, kraftCurrent, u.MaxVersionLevel, quorum.SupportedKRaftVersions.Min, quorum.SupportedKRaftVersions.Max, downgrade, false)
			upgradeKRaft = errs[i] == nil && u.MaxVersionLevel > kraftCurrent
		}
		seen[u.Feature] = true
		if errs[i] != nil && invalid == nil {
			invalid = errs[i]
		}
	}
	if invalid != nil {
		// All or nothing: the valid updates are not applied either.
		for i := range errs {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("%w: not applied, another update of the request is invalid", errInvalidUpdateVersion)
			}
		}
		answer(invalid, errs)
		return
	}
	if tvTo >= 0 && !req.ValidateOnly {
		// A FeatureLevelRecord, decided here on the active controller
		// (the request is forwarded to it).
		if err := s.Backend.Commit([]metadata.Record{metadata.FeatureLevel{Name: metadata.TransactionVersionFeature, Level: tvTo}}); err != nil {
			for i := range errs {
				errs[i] = err
			}
			answer(err, errs)
			return
		}
	}
	if !upgradeKRaft {
		answer(nil, errs) // every feature at its level already
		return
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = defaultQuorumChangeTimeout
	}
	timeout = min(timeout, maxQuorumChangeTimeout)
	s.Backend.Quorum().UpgradeKRaft(req.ValidateOnly, timeout, func(err error) {
		for i := range errs {
			errs[i] = err
		}
		answer(err, errs)
	})
}

// checkLevelChange checks one feature update from level current to to:
// within [lo, hi], a lower level only as a downgrade (and only for
// features that may go down), a higher one not as a downgrade.
func checkLevelChange(feature string, current, to, lo, hi int16, downgrade, mayDowngrade bool) error {
	switch {
	case to < lo || to > hi:
		return fmt.Errorf("%w: %s %d is outside the supported range %d to %d", errInvalidUpdateVersion, feature, to, lo, hi)
	case to < current && !mayDowngrade:
		return fmt.Errorf("%w: %s cannot be downgraded from %d to %d", errInvalidUpdateVersion, feature, current, to)
	case to < current && !downgrade:
		return fmt.Errorf("%w: %s %d is a downgrade from %d: ask for a downgrade", errInvalidUpdateVersion, feature, to, current)
	case to > current && downgrade:
		return fmt.Errorf("%w: %s %d is an upgrade from %d, not a downgrade", errInvalidUpdateVersion, feature, to, current)
	}
	return nil
}

// apiVersionsFeatures fills ApiVersions v3's feature fields.
func apiVersionsFeatures(s *Server, resp *kmsg.ApiVersionsResponse) {
	sf := kmsg.NewApiVersionsResponseSupportedFeature()
	sf.Name, sf.MinVersion, sf.MaxVersion = KRaftVersionFeature, quorum.SupportedKRaftVersions.Min, quorum.SupportedKRaftVersions.Max
	resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	resp.FinalizedFeaturesEpoch = s.Backend.Image().Version()
	tv := kmsg.NewApiVersionsResponseSupportedFeature()
	tv.Name, tv.MinVersion, tv.MaxVersion = metadata.TransactionVersionFeature, metadata.TransactionVersionMin, metadata.TransactionVersionMax
	resp.SupportedFeatures = append(resp.SupportedFeatures, tv)
	if v := s.Backend.Quorum().KRaftVersion(); v > 0 {
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = KRaftVersionFeature, v, v
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
	if v := s.Backend.Image().TransactionVersion(); v > 0 {
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = metadata.TransactionVersionFeature, v, v
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
}
