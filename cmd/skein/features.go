package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// skein features: kafka-features' describe, upgrade and downgrade. The
// features Skein finalizes are kraft.version: 0 for a static controller
// quorum, 1 for a dynamic one (KIP-853); `upgrade --feature
// kraft.version=1` turns a static quorum dynamic, as in Kafka 4.1; and
// transaction.version (0-2, KIP-890 part 2 at 2, a new cluster's level),
// which may go up or down.

func init() {
	commands["features"] = command{summary: "describe, upgrade and downgrade finalized features: kraft.version, transaction.version (like kafka-features)", run: clientCommand(runFeatures)}
}

const featuresUsage = "usage: skein features describe|upgrade|downgrade [--feature NAME=LEVEL]... [--dry-run] [--unsafe]"

// featureUpdateTimeout is what UpdateFeatures asks the controller to wait
// (Kafka's admin client default).
const featureUpdateTimeout = 60 * time.Second

func runFeatures(ctx context.Context, args []string, s streams) error {
	return runSubcommand(ctx, args, s, featuresUsage, map[string]clientRun{
		"describe": runFeaturesDescribe,
		"upgrade": func(ctx context.Context, args []string, s streams) error {
			return runFeaturesUpdate(ctx, args, s, false)
		},
		"downgrade": func(ctx context.Context, args []string, s streams) error {
			return runFeaturesUpdate(ctx, args, s, true)
		},
	})
}

// featureLevels is one node's ApiVersions view of the features.
type featureLevels struct {
	supported []kmsg.ApiVersionsResponseSupportedFeature
	finalized map[string]int16
	epoch     int64
}

func describeFeatures(ctx context.Context, cl *kgo.Client) (featureLevels, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "skein", "features"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return featureLevels{}, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return featureLevels{}, err
	}
	fl := featureLevels{supported: resp.SupportedFeatures, finalized: map[string]int16{}, epoch: resp.FinalizedFeaturesEpoch}
	for _, f := range resp.FinalizedFeatures {
		fl.finalized[f.Name] = f.MaxVersionLevel
	}
	slices.SortFunc(fl.supported, func(a, b kmsg.ApiVersionsResponseSupportedFeature) int { return strings.Compare(a.Name, b.Name) })
	return fl, nil
}

func runFeaturesDescribe(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein features describe", s)
	bootstrap := clusterFlag(fs)
	timeout := fs.Duration("timeout", adminTimeout, "give up on the cluster after this long")
	cl, ctx, done, err := quorumClient(ctx, fs, args, bootstrap, timeout)
	if err != nil {
		return err
	}
	defer done()
	fl, err := describeFeatures(ctx, cl)
	if err != nil {
		return fmt.Errorf("describe features from %s: %w", bootstrap, explainError(err))
	}
	// kafka-features describe's lines; a feature not finalized is at 0.
	for _, f := range fl.supported {
		fmt.Fprintf(s.out, "Feature: %s\tSupportedMinVersion: %d\tSupportedMaxVersion: %d\tFinalizedVersionLevel: %d\tEpoch: %d\n",
			f.Name, f.MinVersion, f.MaxVersion, fl.finalized[f.Name], fl.epoch)
	}
	return nil
}

// featureFlag collects --feature NAME=LEVEL.
type featureFlag []kmsg.UpdateFeaturesRequestFeatureUpdate

func (f *featureFlag) String() string { return "" }

func (f *featureFlag) Set(v string) error {
	name, level, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("--feature %q: want NAME=LEVEL", v)
	}
	n, err := strconv.ParseInt(level, 10, 16)
	if err != nil || n < 0 {
		return fmt.Errorf("--feature %q: the level must be a number from 0", v)
	}
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel = name, int16(n)
	*f = append(*f, u)
	return nil
}

func runFeaturesUpdate(ctx context.Context, args []string, s streams, downgrade bool) error {
	verb := map[bool]string{false: "upgrade", true: "downgrade"}[downgrade]
	fs := newFlagSet("skein features "+verb, s)
	bootstrap := clusterFlag(fs)
	timeout := fs.Duration("timeout", featureUpdateTimeout+10*time.Second, "give up on the cluster after this long")
	var features featureFlag
	fs.Var(&features, "feature", "a feature and the level to "+verb+" it to, NAME=LEVEL (e.g. kraft.version=1, transaction.version=2); repeatable")
	dryRun := fs.Bool("dry-run", false, "validate only: say whether the "+verb+" would succeed")
	unsafe := fs.Bool("unsafe", false, "(downgrade) allow a downgrade that may lose metadata")
	cl, ctx, done, err := quorumClient(ctx, fs, args, bootstrap, timeout)
	if err != nil {
		return err
	}
	defer done()
	if len(features) == 0 {
		return errors.New("give --feature NAME=LEVEL (--release-version is not supported)")
	}
	if *unsafe && !downgrade {
		return errors.New("--unsafe is for downgrade")
	}
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis, req.ValidateOnly = int32(featureUpdateTimeout/time.Millisecond), *dryRun
	upgradeType := int8(1) // UPGRADE
	if downgrade {
		upgradeType = 2 // SAFE_DOWNGRADE
		if *unsafe {
			upgradeType = 3
		}
	}
	for i := range features {
		features[i].UpgradeType, features[i].AllowDowngrade = upgradeType, downgrade
	}
	req.FeatureUpdates = features
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("%s features through %s: %w", verb, bootstrap, explainError(err))
	}
	perFeature := map[string]error{}
	for _, r := range resp.Results {
		perFeature[r.Feature] = codeError(r.ErrorCode, r.ErrorMessage)
	}
	top := codeError(resp.ErrorCode, resp.ErrorMessage)
	var failed error
	for _, f := range features {
		err, ok := perFeature[f.Feature]
		if !ok {
			err = top
		}
		// kafka-features' lines.
		switch {
		case err != nil:
			fmt.Fprintf(s.out, "Could not %s %s to %d. %v\n", verb, f.Feature, f.MaxVersionLevel, explainError(err))
			failed = errors.Join(failed, fmt.Errorf("%s %s: %w", verb, f.Feature, err))
		case *dryRun:
			fmt.Fprintf(s.out, "%s can be %sd to %d.\n", f.Feature, verb, f.MaxVersionLevel)
		default:
			fmt.Fprintf(s.out, "%s was %sd to %d.\n", f.Feature, verb, f.MaxVersionLevel)
		}
	}
	if failed == nil && top != nil {
		failed = top
	}
	return failed
}

// codeError is a Kafka error code with its message, nil for none.
func codeError(code int16, msg *string) error {
	if err := kerr.ErrorForCode(code); err != nil {
		return withMessage(err, msg)
	}
	return nil
}
