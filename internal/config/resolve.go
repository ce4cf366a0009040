package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// isNumeric reports the integer kinds, whose empty value means "unset".
func (k Kind) isNumeric() bool { return k.bitSize() != 0 }

// explicitValue returns the value set for name, treating an empty value of
// an unset-able numeric property as not set.
func explicitValue(values map[string]string, name string) (string, bool) {
	v, ok := values[name]
	if !ok {
		return "", false
	}
	if v == "" {
		if p := theRegistry().byName[name]; p != nil && p.Kind.isNumeric() {
			return "", false
		}
	}
	return v, true
}

// resolveBroker returns the effective value of broker property p: its own
// explicit value, else the first explicitly set fallback scaled into p's
// unit, else p's default, else the first fallback default. The second
// result names the property the value came from.
func resolveBroker(values map[string]string, p *Property) (value, from string, explicit bool) {
	if v, ok := explicitValue(values, p.Name); ok {
		return v, p.Name, true
	}
	for _, f := range p.Fallbacks {
		if v, ok := explicitValue(values, f.Name); ok {
			return scaleText(v, f.Scale), f.Name, true
		}
	}
	if p.Default != "" || len(p.Fallbacks) == 0 {
		return p.Default, p.Name, false
	}
	for _, f := range p.Fallbacks {
		if fp := theRegistry().byName[f.Name]; fp != nil && fp.Default != "" {
			return scaleText(fp.Default, f.Scale), f.Name, false
		}
	}
	return "", p.Name, false
}

// scaleText multiplies a validated integer by scale. Negative means
// "unlimited" in every chain that scales (-1 hours is not -3600000 ms).
func scaleText(v string, scale int64) string {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return v // validation reports it
	}
	if n < 0 {
		return "-1"
	}
	return strconv.FormatInt(n*scale, 10)
}

// reader turns validated effective values into typed ones. Values were
// checked before, so a parse failure here is a registry bug; it is still
// returned as an error rather than a panic.
type reader struct {
	values map[string]string
	err    error
}

func (r *reader) text(name string) string {
	p := theRegistry().byName[name]
	if p == nil {
		r.fail(fmt.Errorf("config: internal: no property %q", name))
		return ""
	}
	v, _, _ := resolveBroker(r.values, p)
	return strings.TrimSpace(v)
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) integer(name string, bits int) int64 {
	v := r.text(name)
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		r.fail(fmt.Errorf("config: internal: %s=%q: %w", name, v, err))
	}
	return n
}

func (r *reader) int64(name string) int64 { return r.integer(name, 64) }
func (r *reader) int32(name string) int32 { return int32(r.integer(name, 32)) }
func (r *reader) int16(name string) int16 { return int16(r.integer(name, 16)) }
func (r *reader) int(name string) int     { return int(r.integer(name, 32)) }

func (r *reader) float64(name string) float64 {
	v := r.text(name)
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		r.fail(fmt.Errorf("config: internal: %s=%q: %w", name, v, err))
	}
	return f
}

func (r *reader) bool(name string) bool {
	v := r.text(name)
	b, err := parseBool(v)
	if err != nil {
		r.fail(fmt.Errorf("config: internal: %s: %w", name, err))
	}
	return b
}

func (r *reader) list(name string) []string {
	items, err := splitList(r.text(name))
	if err != nil {
		r.fail(fmt.Errorf("config: internal: %s: %w", name, err))
	}
	return items
}

// durationMs reads milliseconds; registry bounds keep it within Duration.
func (r *reader) durationMs(name string) time.Duration {
	return time.Duration(r.int64(name)) * time.Millisecond
}

// durationUnits reads a count of unit (seconds, minutes), saturating rather
// than overflowing.
func (r *reader) durationUnits(name string, unit time.Duration) time.Duration {
	n := r.int64(name)
	if n > int64(maxDurationMs*int64(time.Millisecond)/int64(unit)) {
		return time.Duration(maxDurationMs) * time.Millisecond
	}
	return time.Duration(n) * unit
}
