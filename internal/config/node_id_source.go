package config

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// Values of node.id.source.
const (
	NodeIDSourceConfig          = "config"
	NodeIDSourceHostnameOrdinal = "hostname-ordinal"
)

// Option adjusts how Load and NewBroker build a configuration.
type Option func(*settings)

// WithHostname makes node.id.source=hostname-ordinal read name instead of
// the machine's host name, so tests of deployment files can resolve the
// configuration of any pod.
func WithHostname(name string) Option {
	return func(s *settings) {
		s.hostname = func() (string, error) { return name, nil }
	}
}

// defaultHostname is where the host name comes from unless WithHostname
// says otherwise. In a Kubernetes pod it is the pod's name.
var defaultHostname = os.Hostname

// deriveNodeID applies node.id.source: with hostname-ordinal it records
// the node.id the host name stands for as if it had been set explicitly, so
// that every rule about node.id, DescribeConfigs and error origins see it.
// It runs after each explicit value has been validated.
func (s *settings) deriveNodeID() error {
	const sourceKey, idKey = "node.id.source", "node.id"
	source, _ := explicitValue(s.values, sourceKey)
	if source != NodeIDSourceHostnameOrdinal {
		return nil
	}
	if id, set := explicitValue(s.values, idKey); set {
		return &Error{
			Key: sourceKey, Value: source, Origin: s.origins[sourceKey],
			Reason: fmt.Sprintf("%s when %s is set (%s=%q%s): a node's id must come from one place, so unset one of them",
				NodeIDSourceConfig, idKey, idKey, id, originSuffix(s.origins[idKey])),
		}
	}
	host, err := s.hostname()
	if err != nil {
		return fmt.Errorf("config: %s=%s: reading the host name: %w", sourceKey, source, err)
	}
	ordinal, err := hostOrdinal(host)
	if err != nil {
		return &Error{
			Key: sourceKey, Value: source, Origin: s.origins[sourceKey],
			Reason: fmt.Sprintf("%s here: %v", NodeIDSourceConfig, err),
		}
	}
	s.values[idKey] = strconv.FormatInt(ordinal+1, 10)
	s.origins[idKey] = fmt.Sprintf("%s=%s, host name %q", sourceKey, source, host)
	return nil
}

// hostOrdinal returns N from a host name "<anything>-<N>", the shape of a
// StatefulSet pod's name. Only the first DNS label counts, so a fully
// qualified "skein-0.skein-headless" works too. N+1 must fit a node.id.
func hostOrdinal(host string) (int64, error) {
	label, _, _ := strings.Cut(strings.TrimSpace(host), ".")
	cut := strings.LastIndexByte(label, '-')
	digits := label[cut+1:]
	if cut < 0 || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, fmt.Errorf("host name %q does not end in -<ordinal> like a StatefulSet pod's name (skein-0 is node 1)", host)
	}
	// Digits that overflow int64 fail to parse; both are "too large".
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n >= math.MaxInt32 {
		return 0, fmt.Errorf("host name %q: ordinal %s is too large for a node.id (at most %d)", host, digits, math.MaxInt32-1)
	}
	return n, nil
}

// originSuffix formats an origin for the middle of a message, "" if unknown.
func originSuffix(origin string) string {
	if origin == "" {
		return ""
	}
	return " in " + origin
}
