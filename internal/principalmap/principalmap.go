// Package principalmap applies Kafka's ssl.principal.mapping.rules: from a
// TLS client certificate's distinguished name to a principal name.
package principalmap

import (
	"fmt"
	"regexp"
	"strings"
)

// MappingRule is one entry of ssl.principal.mapping.rules: DEFAULT (the
// distinguished name as it is), or RULE:pattern/replacement/[LU].
type MappingRule struct {
	Default     bool
	Pattern     *regexp.Regexp // anchored: the whole name must match, as Java's matches()
	Replacement string         // in Go's expansion syntax ($1 -> ${1})
	Case        byte           // 'L' lower-cases the result, 'U' upper-cases it, 0 keeps it
}

// ruleSyntax is Kafka's: rules separated by commas (and blanks); a
// pattern and replacement hold no '/'.
var ruleSyntax = regexp.MustCompile(`^\s*(?:(DEFAULT)|RULE:([^/]*)/([^/]*)/([LU])?)\s*(?:,|$)`)

// javaGroup is a Java replacement group reference, $1.
var javaGroup = regexp.MustCompile(`\$(\d+)`)

// ParseMappingRules parses ssl.principal.mapping.rules.
func ParseMappingRules(s string) ([]MappingRule, error) {
	var out []MappingRule
	rest := strings.TrimSpace(s)
	for rest != "" {
		m := ruleSyntax.FindStringSubmatch(rest)
		if m == nil {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: %q is not DEFAULT or RULE:pattern/replacement/[LU]", rest)
		}
		rest = strings.TrimSpace(rest[len(m[0]):])
		if m[1] != "" {
			out = append(out, MappingRule{Default: true})
			continue
		}
		re, err := regexp.Compile("^(?:" + m[2] + ")$")
		if err != nil {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: pattern %q: %w", m[2], err)
		}
		r := MappingRule{Pattern: re, Replacement: javaGroup.ReplaceAllString(m[3], "$${$1}")}
		if m[4] != "" {
			r.Case = m[4][0]
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("ssl.principal.mapping.rules: empty (DEFAULT keeps the distinguished name)")
	}
	return out, nil
}

// MapPrincipal turns a certificate's distinguished name into a principal
// name with the first rule that applies; none applying is an error, as in
// Kafka, which then refuses the connection.
func MapPrincipal(rules []MappingRule, dn string) (string, error) {
	for _, r := range rules {
		if r.Default {
			return dn, nil
		}
		m := r.Pattern.FindStringSubmatchIndex(dn)
		if m == nil {
			continue
		}
		name := string(r.Pattern.ExpandString(nil, r.Replacement, dn, m))
		switch r.Case {
		case 'L':
			name = strings.ToLower(name)
		case 'U':
			name = strings.ToUpper(name)
		}
		return name, nil
	}
	return "", fmt.Errorf("no ssl.principal.mapping.rules rule applies to %q", dn)
}
