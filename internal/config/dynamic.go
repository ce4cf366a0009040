package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/skein-log/skein/internal/metadata"
)

// UpdateMode is how a broker property may change at runtime, as Kafka's
// broker configuration reference lists it (DynamicBrokerConfig, KIP-226).
type UpdateMode int8

const (
	// UpdateReadOnly properties are read at start: changing one needs a
	// restart, and AlterConfigs refuses it.
	UpdateReadOnly UpdateMode = iota
	// UpdatePerBroker properties may be set dynamically for each broker,
	// never as the cluster-wide default.
	UpdatePerBroker
	// UpdateClusterWide properties may be set dynamically as the
	// cluster-wide default, and per broker (which wins).
	UpdateClusterWide
)

func (m UpdateMode) String() string {
	switch m {
	case UpdatePerBroker:
		return "per-broker"
	case UpdateClusterWide:
		return "cluster-wide"
	}
	return "read-only"
}

// Dynamic is the dynamic configuration that applies to one broker, from
// the metadata image: its own (the resource named by its id) and the
// cluster-wide default (the resource named ""). Maps are by broker
// property name and are not modified.
type Dynamic struct {
	Broker  map[string]string
	Default map[string]string
}

// Errors of ValidateDynamic, besides *Error for an unknown property or an
// invalid value. Kafka answers both with INVALID_REQUEST.
var (
	// ErrNotDynamic: a read-only property (Kafka's "Cannot update these
	// configs dynamically").
	ErrNotDynamic = errors.New("cannot update these configs dynamically")
	// ErrPerBrokerOnly: a per-broker property set as the cluster default
	// (Kafka's "Cannot update these configs at default cluster level,
	// broker id must be specified").
	ErrPerBrokerOnly = errors.New("cannot update these configs at default cluster level, broker id must be specified")
)

// ValidateDynamic checks the whole set of dynamic configs a broker
// resource would hold after a change: perBroker for a broker's own
// resource, false for the cluster-wide default. Every name must be a
// broker property whose update mode allows that resource, and every value
// valid for it.
func ValidateDynamic(perBroker bool, configs map[string]string) error {
	var readOnly, perBrokerOnly []string
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		p := theRegistry().byName[name]
		if p == nil || p.Ignored {
			return &Error{Key: name, Value: configs[name], Unknown: true, Reason: "not a broker property"}
		}
		switch {
		case p.Update == UpdateReadOnly:
			readOnly = append(readOnly, name)
			continue
		case p.Update == UpdatePerBroker && !perBroker:
			perBrokerOnly = append(perBrokerOnly, name)
			continue
		}
		if reason, ok := p.Validate(configs[name]); !ok {
			return invalid(name, configs[name], reason)
		}
	}
	if len(readOnly) > 0 {
		return fmt.Errorf("%w: %s (read-only: they need a restart)", ErrNotDynamic, strings.Join(readOnly, ", "))
	}
	if len(perBrokerOnly) > 0 {
		return fmt.Errorf("%w: %s", ErrPerBrokerOnly, strings.Join(perBrokerOnly, ", "))
	}
	return nil
}

// dynamicLayers are the dynamic sources of p's value, most specific
// first; none for a read-only property, so a value stored for one (by a
// node whose registry differs) is never used.
func (d Dynamic) layers(p *Property) []dynamicLayer {
	if p.Update == UpdateReadOnly {
		return nil
	}
	return []dynamicLayer{{d.Broker, SourceDynamicBroker}, {d.Default, SourceDynamicDefaultBroker}}
}

type dynamicLayer struct {
	values map[string]string
	source ConfigSource
}

// explicitIn returns p's value set in values, or the first of its
// fallbacks set there, scaled into p's unit.
func explicitIn(values map[string]string, p *Property) (string, bool) {
	if v, ok := explicitValue(values, p.Name); ok {
		return v, true
	}
	for _, f := range p.Fallbacks {
		if v, ok := explicitValue(values, f.Name); ok {
			return scaleText(v, f.Scale), true
		}
	}
	return "", false
}

// resolveDynamic is the effective value of broker property p and where it
// comes from, in Kafka's precedence: per-broker dynamic, cluster-default
// dynamic, static (server.properties, environment, flags), default.
func resolveDynamic(static map[string]string, d Dynamic, p *Property) (string, ConfigSource) {
	for _, l := range d.layers(p) {
		if v, ok := explicitIn(l.values, p); ok {
			return v, l.source
		}
	}
	v, _, explicit := resolveBroker(static, p)
	if explicit {
		return v, SourceStaticBroker
	}
	return v, SourceDefault
}

// DynamicLong is the effective value of the long broker property name for
// a broker with static configuration b and dynamic configuration d. A
// dynamic value this node cannot parse (the controller validated it, so
// only a registry that differs between versions) is skipped for the
// static one.
func DynamicLong(b *Broker, d Dynamic, name string) (int64, error) {
	p := theRegistry().byName[name]
	if p == nil || p.Kind != KindLong {
		return 0, fmt.Errorf("config: internal: %q is not a long property", name)
	}
	v, source := resolveDynamic(b.Raw, d, p)
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err == nil && n >= p.Min && n <= p.Max {
		return n, nil
	}
	if source == SourceDynamicBroker || source == SourceDynamicDefaultBroker {
		return DynamicLong(b, Dynamic{}, name)
	}
	return 0, fmt.Errorf("config: internal: %s=%q does not parse: %w", name, v, err)
}

// DynamicOf is the dynamic configuration of broker id in image im: the
// ConfigRecords of its own resource and of the cluster default.
func DynamicOf(im *metadata.Image, id int32) Dynamic {
	return Dynamic{
		Broker:  im.BrokerConfigs(strconv.Itoa(int(id))),
		Default: im.BrokerConfigs(metadata.ClusterDefaultBroker),
	}
}

// ReplicationThrottleRates are broker b's leader and follower replication
// throttle rates (leader/follower.replication.throttled.rate) in image im,
// dynamic over static; a registry bug leaves the static ones.
func ReplicationThrottleRates(b *Broker, im *metadata.Image) (leader, follower int64) {
	d := DynamicOf(im, b.NodeID)
	return dynamicLongOr(b, d, "leader.replication.throttled.rate", b.LeaderReplicationThrottledRate),
		dynamicLongOr(b, d, "follower.replication.throttled.rate", b.FollowerReplicationThrottledRate)
}

// AlterLogDirsRate is broker b's replica.alter.log.dirs.io.max.bytes.per.second
// in image im, dynamic over static.
func AlterLogDirsRate(b *Broker, im *metadata.Image) int64 {
	return dynamicLongOr(b, DynamicOf(im, b.NodeID), "replica.alter.log.dirs.io.max.bytes.per.second", b.AlterLogDirsRate)
}

// dynamicLongOr is DynamicLong, or static should a registry bug make it
// fail.
func dynamicLongOr(b *Broker, d Dynamic, name string, static int64) int64 {
	v, err := DynamicLong(b, d, name)
	if err != nil {
		return static
	}
	return v
}
