// Package authz decides whether a principal may perform an operation on a
// resource, with the semantics of Kafka's StandardAuthorizer: LITERAL and
// PREFIXED resource patterns and the "*" wildcard, ALLOW and DENY entries
// with DENY winning, operation implications, host matching, super users
// and allow.everyone.if.no.acl.found.
//
// It is a pure core: a Set of ACLs is immutable once built (the metadata
// image holds one), and Authorize reads no clock and takes no lock.
package authz

import (
	"fmt"
	"net"
	"strings"
)

// ResourceType is Kafka's resource type code.
type ResourceType int8

// Kafka's resource type codes (org.apache.kafka.common.resource.ResourceType).
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// PatternType is Kafka's resource pattern type code.
type PatternType int8

// Kafka's pattern type codes (PatternType). ANY and MATCH appear only in
// filters.
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

// Operation is Kafka's ACL operation code.
type Operation int8

// Kafka's operation codes (AclOperation).
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
)

// Permission is Kafka's ACL permission type code.
type Permission int8

// Kafka's permission codes (AclPermissionType).
const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1
	PermissionDeny    Permission = 2
	PermissionAllow   Permission = 3
)

// Wildcard is the resource name, principal name and host that match all.
const Wildcard = "*"

// ClusterName is the only name of the CLUSTER resource.
const ClusterName = "kafka-cluster"

// Principal is an authenticated identity, "User:alice" in Kafka's notation.
type Principal struct {
	Type string
	Name string
}

// Anonymous is the principal of unauthenticated (PLAINTEXT) connections.
var Anonymous = Principal{Type: "User", Name: "ANONYMOUS"}

// String renders the principal as Kafka does: Type:Name.
func (p Principal) String() string { return p.Type + ":" + p.Name }

// ParsePrincipal reads "Type:Name"; both parts must be non-empty.
func ParsePrincipal(s string) (Principal, error) {
	typ, name, ok := strings.Cut(s, ":")
	if !ok || typ == "" || name == "" {
		return Principal{}, fmt.Errorf("principal %q is not of the form Type:Name (for example User:alice)", s)
	}
	return Principal{Type: typ, Name: name}, nil
}

// ACL is one access control entry bound to a resource pattern: Kafka's
// AclBinding. The ID distinguishes entries in the metadata log.
type ACL struct {
	ID           string
	ResourceType ResourceType
	ResourceName string
	PatternType  PatternType
	Principal    string // "User:alice" or "User:*"
	Host         string // "*" or an IP address
	Operation    Operation
	Permission   Permission
}

// Validate checks an ACL to be stored: concrete types only (no ANY, MATCH
// or UNKNOWN), a name, a Type:Name principal and a host. The errors are
// what CreateAcls answers with INVALID_REQUEST.
func (a ACL) Validate() error {
	switch a.ResourceType {
	case ResourceTopic, ResourceGroup, ResourceCluster, ResourceTransactionalID, ResourceDelegationToken, ResourceUser:
	default:
		return fmt.Errorf("resource type %s cannot be stored in an ACL", a.ResourceType)
	}
	switch a.PatternType {
	case PatternLiteral, PatternPrefixed:
	default:
		return fmt.Errorf("pattern type %s cannot be stored in an ACL: use LITERAL or PREFIXED", a.PatternType)
	}
	if a.ResourceName == "" {
		return fmt.Errorf("resource name must not be empty")
	}
	if a.ResourceType == ResourceCluster && (a.ResourceName != ClusterName || a.PatternType != PatternLiteral) {
		return fmt.Errorf("the cluster resource is the literal name %q", ClusterName)
	}
	if a.PatternType == PatternPrefixed && a.ResourceName == Wildcard {
		// Kafka refuses it too: "*" is the literal wildcard.
		return fmt.Errorf("a PREFIXED pattern may not be %q; use LITERAL %q for all resources", Wildcard, Wildcard)
	}
	if _, err := ParsePrincipal(a.Principal); err != nil {
		return err
	}
	if a.Host != Wildcard && net.ParseIP(a.Host) == nil {
		return fmt.Errorf("host %q is neither %q nor an IP address", a.Host, Wildcard)
	}
	if a.Operation <= OpAny || a.Operation > OpDescribeTokens {
		return fmt.Errorf("operation %s cannot be stored in an ACL", a.Operation)
	}
	if a.Permission != PermissionAllow && a.Permission != PermissionDeny {
		return fmt.Errorf("permission %s cannot be stored in an ACL: use ALLOW or DENY", a.Permission)
	}
	return nil
}

var resourceNames = map[ResourceType]string{
	ResourceUnknown: "UNKNOWN", ResourceAny: "ANY", ResourceTopic: "TOPIC", ResourceGroup: "GROUP",
	ResourceCluster: "CLUSTER", ResourceTransactionalID: "TRANSACTIONAL_ID",
	ResourceDelegationToken: "DELEGATION_TOKEN", ResourceUser: "USER",
}

var patternNames = map[PatternType]string{
	PatternUnknown: "UNKNOWN", PatternAny: "ANY", PatternMatch: "MATCH",
	PatternLiteral: "LITERAL", PatternPrefixed: "PREFIXED",
}

var operationNames = map[Operation]string{
	OpUnknown: "UNKNOWN", OpAny: "ANY", OpAll: "ALL", OpRead: "READ", OpWrite: "WRITE",
	OpCreate: "CREATE", OpDelete: "DELETE", OpAlter: "ALTER", OpDescribe: "DESCRIBE",
	OpClusterAction: "CLUSTER_ACTION", OpDescribeConfigs: "DESCRIBE_CONFIGS",
	OpAlterConfigs: "ALTER_CONFIGS", OpIdempotentWrite: "IDEMPOTENT_WRITE",
	OpCreateTokens: "CREATE_TOKENS", OpDescribeTokens: "DESCRIBE_TOKENS",
}

var permissionNames = map[Permission]string{
	PermissionUnknown: "UNKNOWN", PermissionAny: "ANY", PermissionDeny: "DENY", PermissionAllow: "ALLOW",
}

func (t ResourceType) String() string { return enumName(resourceNames, t) }
func (t PatternType) String() string  { return enumName(patternNames, t) }
func (o Operation) String() string    { return enumName(operationNames, o) }
func (p Permission) String() string   { return enumName(permissionNames, p) }

func enumName[T ~int8](names map[T]string, v T) string {
	if n, ok := names[v]; ok {
		return n
	}
	return fmt.Sprintf("UNKNOWN(%d)", int8(v))
}

// ParseOperation reads an operation name as kafka-acls writes it (Read,
// READ, IdempotentWrite, IDEMPOTENT_WRITE, ...).
func ParseOperation(s string) (Operation, error) { return parseEnum(operationNames, s, "operation") }

// ParseResourceType reads a resource type name (Topic, TOPIC, ...).
func ParseResourceType(s string) (ResourceType, error) {
	return parseEnum(resourceNames, s, "resource type")
}

// ParsePatternType reads a pattern type name (literal, PREFIXED, match, any).
func ParsePatternType(s string) (PatternType, error) {
	return parseEnum(patternNames, s, "resource pattern type")
}

func parseEnum[T ~int8](names map[T]string, s, what string) (T, error) {
	norm := strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
	for v, n := range names {
		if n == norm || strings.ReplaceAll(n, "_", "") == norm {
			if n != "UNKNOWN" {
				return v, nil
			}
		}
	}
	return 0, fmt.Errorf("unknown %s %q", what, s)
}
