package config

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
)

// EnvPrefix starts every environment variable that sets a property:
// SKEIN_LOG_DIRS sets log.dirs. Kafka names contain no underscores, so the
// mapping (drop prefix, lower-case, '_' to '.') is unambiguous.
const EnvPrefix = "SKEIN_"

// EnvName is the environment variable that sets a broker property.
func EnvName(property string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(property, ".", "_"))
}

// Load builds the broker configuration from, in increasing precedence: the
// properties file at path (skipped when path is empty), the SKEIN_* entries
// of env (in os.Environ's "KEY=value" form; other variables are ignored), and
// overrides (from command-line flags). Precedence is per key; Kafka's
// name-based rules (log.retention.ms beats log.retention.hours) then apply to
// the merged set. Unknown keys and invalid values are errors that name the
// key, the value, what is allowed and where the value was set.
func Load(path string, env []string, overrides map[string]string, opts ...Option) (*Broker, error) {
	set := newSettings(opts)
	if path != "" {
		text, err := readFileLimited(path)
		if err != nil {
			return nil, err
		}
		lines, err := parseProperties(text)
		if err != nil {
			return nil, fmt.Errorf("config: %s: %w", path, err)
		}
		for _, l := range lines {
			if err := set.put(l.Key, l.Value, fmt.Sprintf("%s:%d", path, l.Line)); err != nil {
				return nil, err
			}
		}
	}
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(name, EnvPrefix)
		if !ok {
			continue
		}
		key := strings.ToLower(strings.ReplaceAll(rest, "_", "."))
		if err := set.put(key, value, "environment variable "+name); err != nil {
			return nil, err
		}
	}
	// Sorted so that, with several bad overrides, the same one is reported
	// every time.
	for _, key := range slices.Sorted(maps.Keys(overrides)) {
		if err := set.put(key, overrides[key], "command-line override"); err != nil {
			return nil, err
		}
	}
	return set.build()
}

// NewBroker builds the configuration from explicit properties alone, as if
// they were a file; for tests and the simulator.
func NewBroker(props map[string]string, opts ...Option) (*Broker, error) {
	set := newSettings(opts)
	for _, key := range slices.Sorted(maps.Keys(props)) {
		if err := set.put(key, props[key], ""); err != nil {
			return nil, err
		}
	}
	return set.build()
}

// ParseOverride splits a "key=value" command-line override.
func ParseOverride(s string) (key, value string, err error) {
	key, value, ok := strings.Cut(s, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return "", "", fmt.Errorf("config: override %q: expected key=value", s)
	}
	return key, strings.TrimSpace(value), nil
}

// settings collects explicitly set broker properties and where each came from.
type settings struct {
	values  map[string]string
	origins map[string]string
	// listenerValues holds listener.name.NAME.PROPERTY keys: a few
	// properties may be set per listener, as in Kafka.
	listenerValues map[string]string
	// hostname is read only for node.id.source=hostname-ordinal.
	hostname func() (string, error)
}

func newSettings(opts []Option) *settings {
	s := &settings{values: map[string]string{}, origins: map[string]string{}, hostname: defaultHostname}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// put records one explicit value after checking the key exists; the value
// itself is validated in build, once every source has had its say.
func (s *settings) put(key, value, origin string) error {
	key = strings.TrimSpace(key)
	if _, _, ok := listenerScoped(key); ok {
		if s.listenerValues == nil {
			s.listenerValues = map[string]string{}
		}
		s.listenerValues[key] = strings.TrimSpace(value)
		s.origins[key] = origin
		return nil
	}
	if _, ok := theRegistry().byName[key]; !ok {
		e := unknownBrokerKey(key)
		e.Origin = origin
		return e
	}
	s.values[key] = strings.TrimSpace(value)
	s.origins[key] = origin
	return nil
}

func readFileLimited(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("config: reading %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return "", fmt.Errorf("config: %s is larger than %d bytes", path, maxFileBytes)
	}
	return string(data), nil
}
