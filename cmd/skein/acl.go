package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
)

func init() {
	commands["acl"] = command{summary: "create, list and delete ACLs (like kafka-acls)", run: clientCommand(runACL)}
}

const aclUsage = "usage: skein acl create|list|delete [flags]"

func runACL(ctx context.Context, args []string, s streams) error {
	return runSubcommand(ctx, args, s, aclUsage, map[string]clientRun{
		"create": runACLCreate,
		"list":   runACLList,
		"delete": runACLDelete,
	})
}

// aclFlags are kafka-acls' options.
type aclFlags struct {
	bootstrap      *clusterFlags
	timeout        *time.Duration
	allow, deny    stringsFlag // --allow-principal, --deny-principal
	allowHosts     stringsFlag
	denyHosts      stringsFlag
	operations     stringsFlag
	topics         stringsFlag
	groups         stringsFlag
	txnIDs         stringsFlag
	cluster        *bool
	patternType    *string
	principal      *string // --principal (list)
	defaultPattern string
}

func addACLFlags(fs *flag.FlagSet, defaultPattern string) *aclFlags {
	f := &aclFlags{
		bootstrap: clusterFlag(fs),
		timeout:   fs.Duration("timeout", adminTimeout, "give up on the cluster after this long"),
		cluster:   fs.Bool("cluster", false, "the cluster resource"),
		patternType: fs.String("resource-pattern-type", defaultPattern,
			"LITERAL or PREFIXED; listing and deleting also take ANY and MATCH"),
		principal:      fs.String("principal", "", "list: only the ACLs of this principal (Type:Name)"),
		defaultPattern: defaultPattern,
	}
	fs.Var(&f.allow, "allow-principal", "principal (Type:Name, e.g. User:alice; User:* for all) the ACLs allow (repeatable)")
	fs.Var(&f.deny, "deny-principal", "principal the ACLs deny (repeatable)")
	fs.Var(&f.allowHosts, "allow-host", "host (IP address or *) of --allow-principal (repeatable; default *)")
	fs.Var(&f.denyHosts, "deny-host", "host (IP address or *) of --deny-principal (repeatable; default *)")
	fs.Var(&f.operations, "operation", "operation: All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite (repeatable; default All)")
	fs.Var(&f.topics, "topic", "topic (repeatable; * for all)")
	fs.Var(&f.groups, "group", "consumer group (repeatable; * for all)")
	fs.Var(&f.txnIDs, "transactional-id", "transactional id (repeatable; * for all)")
	return f
}

// aclResource is one resource pattern named on the command line.
type aclResource struct {
	typ  authz.ResourceType
	name string
}

func (f *aclFlags) parse(fs *flag.FlagSet, args []string) error {
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q: name resources with --topic, --group, --cluster or --transactional-id", rest)
	}
	return nil
}

func (f *aclFlags) resources() []aclResource {
	var out []aclResource
	for _, t := range f.topics {
		out = append(out, aclResource{authz.ResourceTopic, t})
	}
	for _, g := range f.groups {
		out = append(out, aclResource{authz.ResourceGroup, g})
	}
	for _, x := range f.txnIDs {
		out = append(out, aclResource{authz.ResourceTransactionalID, x})
	}
	if *f.cluster {
		out = append(out, aclResource{authz.ResourceCluster, authz.ClusterName})
	}
	return out
}

func (f *aclFlags) ops(deflt authz.Operation) ([]authz.Operation, error) {
	if len(f.operations) == 0 {
		return []authz.Operation{deflt}, nil
	}
	var out []authz.Operation
	for _, o := range f.operations {
		op, err := authz.ParseOperation(o)
		if err != nil {
			return nil, fmt.Errorf("--operation: %w", err)
		}
		out = append(out, op)
	}
	return out, nil
}

func (f *aclFlags) pattern() (authz.PatternType, error) {
	p, err := authz.ParsePatternType(*f.patternType)
	if err != nil {
		return 0, fmt.Errorf("--resource-pattern-type: %w", err)
	}
	return p, nil
}

// entries are the (principal, host, permission) triples the principal
// and host flags name.
type aclEntry struct {
	principal, host string
	perm            authz.Permission
}

func (f *aclFlags) entries() []aclEntry {
	var out []aclEntry
	add := func(principals, hosts []string, perm authz.Permission) {
		if len(hosts) == 0 {
			hosts = []string{authz.Wildcard}
		}
		for _, p := range principals {
			for _, h := range hosts {
				out = append(out, aclEntry{p, h, perm})
			}
		}
	}
	add(f.allow, f.allowHosts, authz.PermissionAllow)
	add(f.deny, f.denyHosts, authz.PermissionDeny)
	return out
}

func (f *aclFlags) client(ctx context.Context) (*kgo.Client, context.Context, context.CancelFunc, error) {
	cl, err := newClient(f.bootstrap)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, *f.timeout)
	return cl, ctx, func() { cancel(); cl.Close() }, nil
}

func runACLCreate(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein acl create", s)
	f := addACLFlags(fs, "literal")
	if err := f.parse(fs, args); err != nil {
		return err
	}
	pattern, err := f.pattern()
	if err != nil {
		return err
	}
	ops, err := f.ops(authz.OpAll)
	if err != nil {
		return err
	}
	resources, entries := f.resources(), f.entries()
	if len(resources) == 0 || len(entries) == 0 {
		return errors.New("name a resource (--topic, --group, --cluster, --transactional-id) and a principal (--allow-principal or --deny-principal)")
	}
	req := kmsg.NewPtrCreateACLsRequest()
	var created []authz.ACL
	for _, r := range resources {
		for _, e := range entries {
			for _, op := range ops {
				c := kmsg.NewCreateACLsRequestCreation()
				c.ResourceType, c.ResourceName = kmsg.ACLResourceType(r.typ), r.name
				c.ResourcePatternType = kmsg.ACLResourcePatternType(pattern)
				c.Principal, c.Host = e.principal, e.host
				c.Operation, c.PermissionType = kmsg.ACLOperation(op), kmsg.ACLPermissionType(e.perm)
				req.Creations = append(req.Creations, c)
				created = append(created, authz.ACL{ResourceType: r.typ, ResourceName: r.name, PatternType: pattern,
					Principal: e.principal, Host: e.host, Operation: op, Permission: e.perm})
			}
		}
	}
	cl, ctx, done, err := f.client(ctx)
	if err != nil {
		return err
	}
	defer done()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create ACLs: %w", err)
	}
	var failed error
	for i, r := range resp.Results {
		if i >= len(created) {
			break
		}
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			failed = errors.Join(failed, fmt.Errorf("%s: %w%s", describeACL(created[i]), err, detail(r.ErrorMessage)))
			continue
		}
		fmt.Fprintf(s.out, "Created %s\n", describeACL(created[i]))
	}
	return failed
}

func runACLList(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein acl list", s)
	f := addACLFlags(fs, "literal")
	if err := f.parse(fs, args); err != nil {
		return err
	}
	filters, err := f.filters(true)
	if err != nil {
		return err
	}
	cl, ctx, done, err := f.client(ctx)
	if err != nil {
		return err
	}
	defer done()
	for _, flt := range filters {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourceName = kmsg.ACLResourceType(flt.ResourceType), flt.ResourceName
		req.ResourcePatternType = kmsg.ACLResourcePatternType(flt.PatternType)
		req.Principal, req.Host = flt.Principal, flt.Host
		req.Operation, req.PermissionType = kmsg.ACLOperation(flt.Operation), kmsg.ACLPermissionType(flt.Permission)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return fmt.Errorf("list ACLs: %w", err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("list ACLs: %w%s", err, detail(resp.ErrorMessage))
		}
		for _, r := range resp.Resources {
			printResourceACLs(s.out, authz.ResourceType(r.ResourceType), r.ResourceName, authz.PatternType(r.ResourcePatternType), func(yield func(string, string, authz.Operation, authz.Permission)) {
				for _, a := range r.ACLs {
					yield(a.Principal, a.Host, authz.Operation(a.Operation), authz.Permission(a.PermissionType))
				}
			})
		}
	}
	return nil
}

func runACLDelete(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein acl delete", s)
	f := addACLFlags(fs, "literal")
	if err := f.parse(fs, args); err != nil {
		return err
	}
	if len(f.resources()) == 0 {
		return errors.New("name the resources whose ACLs to delete (--topic, --group, --cluster, --transactional-id; --topic '*' with --resource-pattern-type any for all topics)")
	}
	filters, err := f.filters(false)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	for _, flt := range filters {
		df := kmsg.NewDeleteACLsRequestFilter()
		df.ResourceType, df.ResourceName = kmsg.ACLResourceType(flt.ResourceType), flt.ResourceName
		df.ResourcePatternType = kmsg.ACLResourcePatternType(flt.PatternType)
		df.Principal, df.Host = flt.Principal, flt.Host
		df.Operation, df.PermissionType = kmsg.ACLOperation(flt.Operation), kmsg.ACLPermissionType(flt.Permission)
		req.Filters = append(req.Filters, df)
	}
	cl, ctx, done, err := f.client(ctx)
	if err != nil {
		return err
	}
	defer done()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("delete ACLs: %w", err)
	}
	var failed error
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			failed = errors.Join(failed, fmt.Errorf("delete ACLs: %w%s", err, detail(r.ErrorMessage)))
			continue
		}
		for _, m := range r.MatchingACLs {
			fmt.Fprintf(s.out, "Deleted %s\n", describeACL(authz.ACL{ResourceType: authz.ResourceType(m.ResourceType), ResourceName: m.ResourceName,
				PatternType: authz.PatternType(m.ResourcePatternType), Principal: m.Principal, Host: m.Host,
				Operation: authz.Operation(m.Operation), Permission: authz.Permission(m.PermissionType)}))
		}
	}
	return failed
}

// filters turns the flags into ACL filters: one per resource (or one for
// every resource when listing without any), narrowed by the principals,
// hosts and operations given.
func (f *aclFlags) filters(listing bool) ([]authz.Filter, error) {
	pattern, err := f.pattern()
	if err != nil {
		return nil, err
	}
	ops, err := f.ops(authz.OpAny)
	if err != nil {
		return nil, err
	}
	resources := f.resources()
	var base []authz.Filter
	if len(resources) == 0 && listing {
		base = append(base, authz.Filter{ResourceType: authz.ResourceAny, PatternType: authz.PatternAny})
	}
	for _, r := range resources {
		name := r.name
		flt := authz.Filter{ResourceType: r.typ, ResourceName: &name, PatternType: pattern}
		if pattern == authz.PatternAny && name == authz.Wildcard && r.typ != authz.ResourceCluster {
			flt.ResourceName = nil // kafka-acls: '*' with ANY names every resource of the type
		}
		base = append(base, flt)
	}
	var out []authz.Filter
	for _, b := range base {
		for _, op := range ops {
			b.Operation = op
			entries := f.entries()
			if len(entries) == 0 {
				b.Permission = authz.PermissionAny
				if *f.principal != "" {
					p := *f.principal
					b.Principal = &p
				}
				out = append(out, b)
				continue
			}
			for _, e := range entries {
				e := e
				c := b
				c.Principal, c.Host, c.Permission = &e.principal, &e.host, e.perm
				out = append(out, c)
			}
		}
	}
	return out, nil
}

func describeACL(a authz.ACL) string {
	return fmt.Sprintf("%s for %s %q (%s): %s from host %s may %s",
		a.Permission, a.ResourceType, a.ResourceName, a.PatternType, a.Principal, a.Host, verb(a))
}

func verb(a authz.ACL) string {
	if a.Permission == authz.PermissionDeny {
		return "not " + a.Operation.String()
	}
	return a.Operation.String()
}

func printResourceACLs(w io.Writer, rt authz.ResourceType, name string, pt authz.PatternType, each func(func(string, string, authz.Operation, authz.Permission))) {
	fmt.Fprintf(w, "Current ACLs for resource `ResourcePattern(resourceType=%s, name=%s, patternType=%s)`:\n", rt, name, pt)
	each(func(principal, host string, op authz.Operation, perm authz.Permission) {
		fmt.Fprintf(w, " \t(principal=%s, host=%s, operation=%s, permissionType=%s)\n", principal, host, op, perm)
	})
	fmt.Fprintln(w)
}

func detail(msg *string) string {
	if msg == nil || *msg == "" {
		return ""
	}
	return ": " + *msg
}
