package authz

import (
	"fmt"
	"testing"
)

func acl(rt ResourceType, name string, pt PatternType, principal, host string, op Operation, perm Permission) ACL {
	return ACL{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

func withIDs(acls ...ACL) []ACL {
	for i := range acls {
		acls[i].ID = fmt.Sprintf("id-%d", i)
	}
	return acls
}

var alice = Principal{Type: "User", Name: "alice"}

func TestAuthorize(t *testing.T) {
	const ip = "10.0.0.1"
	cases := []struct {
		name     string
		acls     []ACL
		settings Settings
		p        Principal
		host     string
		op       Operation
		rt       ResourceType
		res      string
		want     bool
	}{
		{name: "no acls denies by default", op: OpRead, rt: ResourceTopic, res: "t", want: false},
		{name: "no acls with allow.everyone allows", settings: Settings{AllowIfNoACL: true}, op: OpRead, rt: ResourceTopic, res: "t", want: true},
		{name: "super user allowed despite deny", settings: Settings{SuperUsers: map[Principal]bool{alice: true}},
			acls: []ACL{acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpAll, PermissionDeny)},
			op:   OpWrite, rt: ResourceTopic, res: "t", want: true},
		{name: "literal allow", acls: []ACL{acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead, PermissionAllow)},
			op: OpRead, rt: ResourceTopic, res: "t", want: true},
		{name: "literal allow does not cover another name", acls: []ACL{acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead, PermissionAllow)},
			op: OpRead, rt: ResourceTopic, res: "t2", want: false},
		{name: "acls on another resource leave allow.everyone in force", settings: Settings{AllowIfNoACL: true},
			acls: []ACL{acl(ResourceTopic, "t", PatternLiteral, "User:bob", "*", OpRead, PermissionAllow)},
			op:   OpRead, rt: ResourceTopic, res: "other", want: true},
		{name: "acls for another principal on the resource disable allow.everyone", settings: Settings{AllowIfNoACL: true},
			acls: []ACL{acl(ResourceTopic, "t", PatternLiteral, "User:bob", "*", OpRead, PermissionAllow)},
			op:   OpRead, rt: ResourceTopic, res: "t", want: false},
		{name: "other resource type does not match", acls: []ACL{acl(ResourceGroup, "t", PatternLiteral, "User:alice", "*", OpRead, PermissionAllow)},
			op: OpRead, rt: ResourceTopic, res: "t", want: false},
		{name: "prefixed allow", acls: []ACL{acl(ResourceTopic, "orders-", PatternPrefixed, "User:alice", "*", OpWrite, PermissionAllow)},
			op: OpWrite, rt: ResourceTopic, res: "orders-eu", want: true},
		{name: "prefixed does not match shorter name", acls: []ACL{acl(ResourceTopic, "orders-", PatternPrefixed, "User:alice", "*", OpWrite, PermissionAllow)},
			op: OpWrite, rt: ResourceTopic, res: "orders", want: false},
		{name: "literal wildcard resource", acls: []ACL{acl(ResourceTopic, "*", PatternLiteral, "User:alice", "*", OpRead, PermissionAllow)},
			op: OpRead, rt: ResourceTopic, res: "anything", want: true},
		{name: "literal star in a prefix is not a wildcard", acls: []ACL{acl(ResourceTopic, "a*", PatternLiteral, "User:alice", "*", OpRead, PermissionAllow)},
			op: OpRead, rt: ResourceTopic, res: "ab", want: false},
		{name: "wildcard principal", acls: []ACL{acl(ResourceTopic, "t", PatternLiteral, "User:*", "*", OpRead, PermissionAllow)},
			op: OpRead, rt: ResourceTopic, res: "t", want: true},
		{name: "wildcard principal of another type", acls: []ACL{acl(ResourceTopic, "t", PatternLiteral, "Group:*", "*", OpRead, PermissionAllow)},
			op: OpRead, rt: ResourceTopic, res: "t", want: false},
		{name: "deny wins over allow", acls: []ACL{
			acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead, PermissionAllow),
			acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead, PermissionDeny)},
			op: OpRead, rt: ResourceTopic, res: "t", want: false},
		{name: "prefixed deny wins over literal allow", acls: []ACL{
			acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpAll, PermissionAllow),
			acl(ResourceTopic, "", PatternPrefixed, "User:alice", "*", OpWrite, PermissionDeny)},
			op: OpWrite, rt: ResourceTopic, res: "t", want: false},
		{name: "wildcard-principal deny wins", acls: []ACL{
			acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead, PermissionAllow),
			acl(ResourceTopic, "*", PatternLiteral, "User:*", "*", OpRead, PermissionDeny)},
			op: OpRead, rt: ResourceTopic, res: "t", want: false},
		{name: "deny of ALL denies every operation", acls: []ACL{
			acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpDescribe, PermissionAllow),
			acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpAll, PermissionDeny)},
			op: OpDescribe, rt: ResourceTopic, res: "t", want: false},
		{name: "deny of DESCRIBE does not deny READ", acls: []ACL{
			acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead, PermissionAllow),
			acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpDescribe, PermissionDeny)},
			op: OpRead, rt: ResourceTopic, res: "t", want: true},
		{name: "deny for another host does not apply", acls: []ACL{
			acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead, PermissionAllow),
			acl(ResourceTopic, "t", PatternLiteral, "User:alice", "10.9.9.9", OpRead, PermissionDeny)},
			op: OpRead, rt: ResourceTopic, res: "t", want: true},
		{name: "allow for exact host", acls: []ACL{acl(ResourceTopic, "t", PatternLiteral, "User:alice", ip, OpRead, PermissionAllow)},
			op: OpRead, rt: ResourceTopic, res: "t", want: true},
		{name: "allow for another host", acls: []ACL{acl(ResourceTopic, "t", PatternLiteral, "User:alice", "10.0.0.2", OpRead, PermissionAllow)},
			op: OpRead, rt: ResourceTopic, res: "t", want: false},
		{name: "ALL allows anything", acls: []ACL{acl(ResourceCluster, ClusterName, PatternLiteral, "User:alice", "*", OpAll, PermissionAllow)},
			op: OpClusterAction, rt: ResourceCluster, res: ClusterName, want: true},
	}
	for _, op := range []Operation{OpRead, OpWrite, OpDelete, OpAlter} {
		cases = append(cases, struct {
			name     string
			acls     []ACL
			settings Settings
			p        Principal
			host     string
			op       Operation
			rt       ResourceType
			res      string
			want     bool
		}{name: op.String() + " implies DESCRIBE", acls: []ACL{acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", op, PermissionAllow)},
			op: OpDescribe, rt: ResourceTopic, res: "t", want: true})
	}
	more := []struct {
		have, want Operation
		ok         bool
	}{
		{OpAlterConfigs, OpDescribeConfigs, true},
		{OpDescribeConfigs, OpAlterConfigs, false},
		{OpDescribe, OpRead, false},
		{OpWrite, OpRead, false},
		{OpCreate, OpDescribe, false},
		{OpIdempotentWrite, OpWrite, false},
	}
	for _, m := range more {
		got := Authorizer{ACLs: NewSet(withIDs(acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", m.have, PermissionAllow)))}.
			Authorize(alice, ip, m.want, ResourceTopic, "t")
		if got != m.ok {
			t.Errorf("ALLOW %s, check %s: got %v, want %v", m.have, m.want, got, m.ok)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.p
			if p == (Principal{}) {
				p = alice
			}
			host := c.host
			if host == "" {
				host = ip
			}
			a := Authorizer{ACLs: NewSet(withIDs(c.acls...)), Settings: c.settings}
			if got := a.Authorize(p, host, c.op, c.rt, c.res); got != c.want {
				t.Fatalf("Authorize(%s, %s %s %q) = %v, want %v", p, c.op, c.rt, c.res, got, c.want)
			}
		})
	}
}

func TestAuthorizeAny(t *testing.T) {
	cases := []struct {
		name string
		acls []ACL
		want bool
	}{
		{"no acls", nil, false},
		{"write on one topic", []ACL{acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpWrite, PermissionAllow)}, true},
		{"read only", []ACL{acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead, PermissionAllow)}, false},
		{"allowed topic denied", []ACL{
			acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpWrite, PermissionAllow),
			acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpWrite, PermissionDeny)}, false},
		{"allowed prefix covered by shorter deny prefix", []ACL{
			acl(ResourceTopic, "ab", PatternPrefixed, "User:alice", "*", OpWrite, PermissionAllow),
			acl(ResourceTopic, "a", PatternPrefixed, "User:alice", "*", OpWrite, PermissionDeny)}, false},
		{"allowed prefix not covered by a literal deny", []ACL{
			acl(ResourceTopic, "ab", PatternPrefixed, "User:alice", "*", OpWrite, PermissionAllow),
			acl(ResourceTopic, "ab", PatternLiteral, "User:alice", "*", OpWrite, PermissionDeny)}, true},
		{"wildcard deny", []ACL{
			acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpWrite, PermissionAllow),
			acl(ResourceTopic, "*", PatternLiteral, "User:alice", "*", OpWrite, PermissionDeny)}, false},
		{"group acl is another type", []ACL{acl(ResourceGroup, "g", PatternLiteral, "User:alice", "*", OpWrite, PermissionAllow)}, false},
	}
	for _, c := range cases {
		a := Authorizer{ACLs: NewSet(withIDs(c.acls...))}
		if got := a.AuthorizeAny(alice, "1.2.3.4", OpWrite, ResourceTopic); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func sp(s string) *string { return &s }

func TestFilter(t *testing.T) {
	set := NewSet(withIDs(
		acl(ResourceTopic, "orders", PatternLiteral, "User:alice", "*", OpRead, PermissionAllow),     // 0
		acl(ResourceTopic, "ord", PatternPrefixed, "User:bob", "*", OpWrite, PermissionAllow),        // 1
		acl(ResourceTopic, "*", PatternLiteral, "User:carol", "*", OpDescribe, PermissionDeny),       // 2
		acl(ResourceGroup, "orders", PatternLiteral, "User:alice", "*", OpRead, PermissionAllow),     // 3
		acl(ResourceTopic, "other", PatternLiteral, "User:alice", "1.1.1.1", OpAll, PermissionAllow), // 4
	))
	anyF := Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}
	cases := []struct {
		name string
		edit func(*Filter)
		want []string
	}{
		{"everything", func(*Filter) {}, []string{"id-0", "id-1", "id-2", "id-3", "id-4"}},
		{"topics", func(f *Filter) { f.ResourceType = ResourceTopic }, []string{"id-0", "id-1", "id-2", "id-4"}},
		{"any pattern with name is exact name", func(f *Filter) { f.ResourceName = sp("orders") }, []string{"id-0", "id-3"}},
		{"literal", func(f *Filter) { f.PatternType = PatternLiteral; f.ResourceName = sp("orders") }, []string{"id-0", "id-3"}},
		{"prefixed", func(f *Filter) { f.PatternType = PatternPrefixed }, []string{"id-1"}},
		{"match", func(f *Filter) {
			f.ResourceType = ResourceTopic
			f.PatternType = PatternMatch
			f.ResourceName = sp("orders")
		}, []string{"id-0", "id-1", "id-2"}},
		{"principal", func(f *Filter) { f.Principal = sp("User:alice") }, []string{"id-0", "id-3", "id-4"}},
		{"host", func(f *Filter) { f.Host = sp("1.1.1.1") }, []string{"id-4"}},
		{"operation", func(f *Filter) { f.Operation = OpWrite }, []string{"id-1"}},
		{"permission", func(f *Filter) { f.Permission = PermissionDeny }, []string{"id-2"}},
	}
	for _, c := range cases {
		f := anyF
		c.edit(&f)
		var got []string
		for _, a := range set.Select(f) {
			got = append(got, a.ID)
		}
		if fmt.Sprint(sortStrings(got)) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

func TestValidate(t *testing.T) {
	good := acl(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead, PermissionAllow)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(*ACL){
		func(a *ACL) { a.ResourceType = ResourceAny },
		func(a *ACL) { a.PatternType = PatternMatch },
		func(a *ACL) { a.ResourceName = "" },
		func(a *ACL) { a.Principal = "alice" },
		func(a *ACL) { a.Host = "" },
		func(a *ACL) { a.Host = "example.com" },
		func(a *ACL) { a.Operation = OpAny },
		func(a *ACL) { a.Permission = PermissionAny },
		func(a *ACL) { a.PatternType = PatternPrefixed; a.ResourceName = "*" },
		func(a *ACL) { a.ResourceType = ResourceCluster; a.ResourceName = "c" },
	}
	for i, edit := range bad {
		a := good
		edit(&a)
		if err := a.Validate(); err == nil {
			t.Errorf("case %d: %+v accepted", i, a)
		}
	}
}

func TestParse(t *testing.T) {
	if op, err := ParseOperation("IdempotentWrite"); err != nil || op != OpIdempotentWrite {
		t.Fatalf("IdempotentWrite: %v %v", op, err)
	}
	if op, err := ParseOperation("describe-configs"); err != nil || op != OpDescribeConfigs {
		t.Fatalf("describe-configs: %v %v", op, err)
	}
	if _, err := ParseOperation("unknown"); err == nil {
		t.Fatal("UNKNOWN accepted")
	}
	su, err := ParseSuperUsers("User:admin; User:broker")
	if err != nil || !su[Principal{"User", "admin"}] || !su[Principal{"User", "broker"}] || len(su) != 2 {
		t.Fatalf("super users: %v %v", su, err)
	}
	if _, err := ParseSuperUsers("admin"); err == nil {
		t.Fatal("principal without type accepted")
	}
}
