package authz

import (
	"fmt"
	"slices"
	"strings"
)

// Set is an immutable collection of ACLs indexed for Authorize. The zero
// value and nil are empty sets.
type Set struct {
	byID map[string]ACL
	// literal[type][name] and prefixed[type] hold the entries that can
	// match a resource of that type; prefixed ones are checked by scan,
	// since clusters have few of them.
	literal  map[ResourceType]map[string][]ACL
	prefixed map[ResourceType][]ACL
	sorted   []ACL
}

// NewSet indexes acls. Entries are assumed valid (ACL.Validate).
func NewSet(acls []ACL) *Set {
	s := &Set{
		byID:     make(map[string]ACL, len(acls)),
		literal:  map[ResourceType]map[string][]ACL{},
		prefixed: map[ResourceType][]ACL{},
	}
	for _, a := range acls {
		s.byID[a.ID] = a
	}
	for _, a := range s.byID {
		s.sorted = append(s.sorted, a)
		if a.PatternType == PatternPrefixed {
			s.prefixed[a.ResourceType] = append(s.prefixed[a.ResourceType], a)
			continue
		}
		m := s.literal[a.ResourceType]
		if m == nil {
			m = map[string][]ACL{}
			s.literal[a.ResourceType] = m
		}
		m[a.ResourceName] = append(m[a.ResourceName], a)
	}
	slices.SortFunc(s.sorted, compareACL)
	return s
}

// compareACL orders ACLs for stable listings: by resource, then entry.
func compareACL(x, y ACL) int {
	switch {
	case x.ResourceType != y.ResourceType:
		return int(x.ResourceType) - int(y.ResourceType)
	case x.ResourceName != y.ResourceName:
		return strings.Compare(x.ResourceName, y.ResourceName)
	case x.PatternType != y.PatternType:
		return int(x.PatternType) - int(y.PatternType)
	case x.Principal != y.Principal:
		return strings.Compare(x.Principal, y.Principal)
	case x.Host != y.Host:
		return strings.Compare(x.Host, y.Host)
	case x.Operation != y.Operation:
		return int(x.Operation) - int(y.Operation)
	case x.Permission != y.Permission:
		return int(x.Permission) - int(y.Permission)
	}
	return strings.Compare(x.ID, y.ID)
}

// Len is the number of ACLs.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.byID)
}

// All returns every ACL in a stable order; the slice is the caller's.
func (s *Set) All() []ACL {
	if s == nil {
		return nil
	}
	return slices.Clone(s.sorted)
}

// ByID looks an ACL up by its id.
func (s *Set) ByID(id string) (ACL, bool) {
	if s == nil {
		return ACL{}, false
	}
	a, ok := s.byID[id]
	return a, ok
}

// FindSame returns the id of an ACL equal to a in everything but its id.
// Kafka treats a CreateAcls of an existing binding as success without a
// second copy.
func (s *Set) FindSame(a ACL) (string, bool) {
	if s == nil {
		return "", false
	}
	for _, b := range s.candidates(a.ResourceType, a.ResourceName) {
		id := b.ID
		b.ID = a.ID
		if b == a {
			return id, true
		}
	}
	return "", false
}

// candidates are the ACLs whose pattern matches a resource's name,
// including the literal wildcard.
func (s *Set) candidates(rt ResourceType, name string) []ACL {
	if s == nil {
		return nil
	}
	var out []ACL
	if m := s.literal[rt]; m != nil {
		out = append(out, m[name]...)
		if name != Wildcard {
			out = append(out, m[Wildcard]...)
		}
	}
	for _, a := range s.prefixed[rt] {
		if strings.HasPrefix(name, a.ResourceName) {
			out = append(out, a)
		}
	}
	return out
}

// Settings are the authorizer's broker properties.
type Settings struct {
	// SuperUsers are the principals every check allows (super.users).
	SuperUsers map[Principal]bool
	// AllowIfNoACL allows an operation on a resource no ACL names
	// (allow.everyone.if.no.acl.found).
	AllowIfNoACL bool
}

// ParseSuperUsers reads super.users: principals separated by semicolons,
// as Kafka writes them (User:admin;User:broker).
func ParseSuperUsers(v string) (map[Principal]bool, error) {
	out := map[Principal]bool{}
	for _, part := range strings.Split(v, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p, err := ParsePrincipal(part)
		if err != nil {
			return nil, fmt.Errorf("super.users: %w", err)
		}
		out[p] = true
	}
	return out, nil
}

// Authorizer answers checks against one Set with one Settings.
type Authorizer struct {
	ACLs     *Set
	Settings Settings
}

// Authorize reports whether p connecting from host may perform op on the
// resource (rt, name). The rules, in Kafka's order: super users are
// allowed; a matching DENY denies; a matching ALLOW allows; a resource no
// ACL names at all follows AllowIfNoACL; otherwise denied.
func (a Authorizer) Authorize(p Principal, host string, op Operation, rt ResourceType, name string) bool {
	if a.Settings.SuperUsers[p] {
		return true
	}
	cands := a.ACLs.candidates(rt, name)
	if len(cands) == 0 {
		return a.Settings.AllowIfNoACL
	}
	ps := p.String()
	allowed := false
	for _, acl := range cands {
		if !principalMatches(acl.Principal, p, ps) || !hostMatches(acl.Host, host) {
			continue
		}
		switch acl.Permission {
		case PermissionDeny:
			// DENY matches only its own operation or ALL: a DENY of
			// DESCRIBE does not deny READ, as in Kafka.
			if acl.Operation == op || acl.Operation == OpAll {
				return false
			}
		case PermissionAllow:
			if allowImplies(acl.Operation, op) {
				allowed = true
			}
		}
	}
	return allowed
}

// allowImplies says whether an ALLOW of have grants want: ALL grants
// everything, READ/WRITE/DELETE/ALTER grant DESCRIBE, and ALTER_CONFIGS
// grants DESCRIBE_CONFIGS.
func allowImplies(have, want Operation) bool {
	if have == want || have == OpAll {
		return true
	}
	switch want {
	case OpDescribe:
		return have == OpRead || have == OpWrite || have == OpDelete || have == OpAlter
	case OpDescribeConfigs:
		return have == OpAlterConfigs
	}
	return false
}

func principalMatches(aclPrincipal string, p Principal, ps string) bool {
	if aclPrincipal == ps {
		return true
	}
	typ, name, _ := strings.Cut(aclPrincipal, ":")
	return name == Wildcard && typ == p.Type
}

func hostMatches(aclHost, host string) bool {
	return aclHost == Wildcard || aclHost == host
}

// AuthorizeAny reports whether p may perform op on at least one resource
// of type rt: Kafka's authorizeByResourceType, which InitProducerId uses
// to let any principal that may WRITE some topic be an idempotent
// producer. An ALLOW counts unless a DENY covers every resource it names.
func (a Authorizer) AuthorizeAny(p Principal, host string, op Operation, rt ResourceType) bool {
	if a.Settings.SuperUsers[p] {
		return true
	}
	ps := p.String()
	matches := func(acl ACL) bool {
		return principalMatches(acl.Principal, p, ps) && hostMatches(acl.Host, host)
	}
	var denyLiteral = map[string]bool{}
	var denyPrefixes []string
	var allows []ACL
	seen := false
	all := a.ACLs.All()
	for _, acl := range all {
		if acl.ResourceType != rt {
			continue
		}
		seen = true
		if !matches(acl) {
			continue
		}
		switch acl.Permission {
		case PermissionDeny:
			if acl.Operation != op && acl.Operation != OpAll {
				continue
			}
			if acl.PatternType == PatternLiteral && acl.ResourceName == Wildcard {
				return false
			}
			if acl.PatternType == PatternLiteral {
				denyLiteral[acl.ResourceName] = true
			} else {
				denyPrefixes = append(denyPrefixes, acl.ResourceName)
			}
		case PermissionAllow:
			if allowImplies(acl.Operation, op) {
				allows = append(allows, acl)
			}
		}
	}
	for _, acl := range allows {
		covered := false
		for _, d := range denyPrefixes {
			if strings.HasPrefix(acl.ResourceName, d) {
				covered = true
			}
		}
		if acl.PatternType == PatternLiteral && denyLiteral[acl.ResourceName] {
			covered = true
		}
		if !covered {
			return true
		}
	}
	return !seen && a.Settings.AllowIfNoACL
}

// Filter selects ACLs, as DescribeAcls and DeleteAcls do. ANY matches
// every value of a field; a nil string matches any value. A MATCH pattern
// selects the ACLs that would apply to the named resource: its literal
// entries, the literal wildcard and the prefixes of its name.
type Filter struct {
	ResourceType ResourceType
	ResourceName *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Matches reports whether a is selected by f.
func (f Filter) Matches(a ACL) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != a.ResourceType {
		return false
	}
	switch f.PatternType {
	case PatternAny:
		if f.ResourceName != nil && *f.ResourceName != a.ResourceName {
			return false
		}
	case PatternMatch:
		if f.ResourceName != nil {
			n := *f.ResourceName
			ok := false
			switch a.PatternType {
			case PatternLiteral:
				ok = a.ResourceName == n || a.ResourceName == Wildcard
			case PatternPrefixed:
				ok = strings.HasPrefix(n, a.ResourceName)
			}
			if !ok {
				return false
			}
		}
	default:
		if f.PatternType != a.PatternType {
			return false
		}
		if f.ResourceName != nil && *f.ResourceName != a.ResourceName {
			return false
		}
	}
	if f.Principal != nil && *f.Principal != a.Principal {
		return false
	}
	if f.Host != nil && *f.Host != a.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != a.Operation {
		return false
	}
	if f.Permission != PermissionAny && f.Permission != a.Permission {
		return false
	}
	return true
}

// ValidateFilter rejects filters Kafka refuses: UNKNOWN in any field.
func (f Filter) Validate() error {
	switch {
	case f.ResourceType == ResourceUnknown || f.ResourceType > ResourceUser || f.ResourceType < 0:
		return fmt.Errorf("filter resource type %s is unknown", f.ResourceType)
	case f.PatternType == PatternUnknown || f.PatternType > PatternPrefixed || f.PatternType < 0:
		return fmt.Errorf("filter pattern type %s is unknown", f.PatternType)
	case f.Operation == OpUnknown || f.Operation > OpDescribeTokens || f.Operation < 0:
		return fmt.Errorf("filter operation %s is unknown", f.Operation)
	case f.Permission == PermissionUnknown || f.Permission > PermissionAllow || f.Permission < 0:
		return fmt.Errorf("filter permission %s is unknown", f.Permission)
	}
	return nil
}

// Select returns the ACLs f matches, in a stable order.
func (s *Set) Select(f Filter) []ACL {
	var out []ACL
	for _, a := range s.All() {
		if f.Matches(a) {
			out = append(out, a)
		}
	}
	return out
}
