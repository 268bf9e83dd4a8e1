// Package acl is Kafka's authorization model: ACL bindings (a resource pattern,
// a principal, a host, an operation, ALLOW or DENY), the filters DescribeAcls and
// DeleteAcls send, an immutable index of a cluster's ACLs (Set), and the
// Authorizer that decides a request against it, with super users and
// allow.everyone.if.no.acl.found, as Kafka's StandardAuthorizer decides.
//
// It is pure: no I/O, no wire protocol (kafkaapi checks each API), no storage
// (cluster keeps ACLs in etcd and builds a Set from them). docs/security.md
// describes the model.
package acl

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"skiff/auth"
)

// ResourceType is what an ACL is about. The numbers are Kafka's (the protocol's
// resource_type); Skiff keeps ACLs of the four types it authorizes.
type ResourceType int8

// Resource types.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1 // filters only
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
)

// ClusterName is the name of the one cluster resource, as Kafka names it.
const ClusterName = "kafka-cluster"

// Wildcard is a literal resource name, a host and a principal name matching
// every one.
const Wildcard = "*"

// WildcardPrincipal matches every principal (User:*).
var WildcardPrincipal = auth.Principal{Type: auth.UserType, Name: Wildcard}

// PatternType is how an ACL's resource name matches: literally (the name "*"
// matches every resource of its type) or as a prefix. Any and Match occur in
// filters only.
type PatternType int8

// Pattern types (Kafka's numbers).
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1 // filters: any pattern type, the name as given
	PatternMatch    PatternType = 2 // filters: every ACL that would apply to the name
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

// Operation is what a principal does to a resource (Kafka's numbers).
type Operation int8

// Operations.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1 // filters only
	OpAll             Operation = 2 // every operation
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
)

// Permission is ALLOW or DENY (Kafka's numbers).
type Permission int8

// Permissions.
const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1 // filters only
	Deny              Permission = 2
	Allow             Permission = 3
)

// Kafka's enum names, in number order; "" where Skiff has no such value.
var (
	resourceNames   = []string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID"}
	patternNames    = []string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}
	operationNames  = []string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"}
	permissionNames = []string{"UNKNOWN", "ANY", "DENY", "ALLOW"}
)

func name(names []string, n int8) string {
	if n >= 0 && int(n) < len(names) {
		return names[n]
	}
	return fmt.Sprintf("UNKNOWN(%d)", n)
}

func (t ResourceType) String() string { return name(resourceNames, int8(t)) }
func (t PatternType) String() string  { return name(patternNames, int8(t)) }
func (o Operation) String() string    { return name(operationNames, int8(o)) }
func (p Permission) String() string   { return name(permissionNames, int8(p)) }

// parse finds s among names, ignoring case, underscores and dashes, so that
// Kafka's enum name (CLUSTER_ACTION), kafka-acls.sh's spelling (ClusterAction)
// and a flag's (cluster-action) all read. UNKNOWN never parses.
func parse[T ~int8](names []string, what, s string) (T, error) {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	for i, n := range names {
		if i > 0 && norm(n) == norm(s) {
			return T(i), nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q", what, s)
}

// ParseResourceType reads a resource type: Topic, Group, Cluster,
// TransactionalId (any case, with or without underscores), or Any.
func ParseResourceType(s string) (ResourceType, error) {
	return parse[ResourceType](resourceNames, "resource type", s)
}

// ParsePatternType reads a pattern type: Literal, Prefixed, or Any and Match.
func ParsePatternType(s string) (PatternType, error) {
	return parse[PatternType](patternNames, "pattern type", s)
}

// ParseOperation reads an operation as kafka-acls.sh or Kafka's enum spells it
// (Read, ClusterAction, IDEMPOTENT_WRITE, ...).
func ParseOperation(s string) (Operation, error) {
	return parse[Operation](operationNames, "operation", s)
}

// ParsePermission reads Allow, Deny or Any.
func ParsePermission(s string) (Permission, error) {
	return parse[Permission](permissionNames, "permission", s)
}

// Binding is one ACL: Principal may (Allow) or may not (Deny) do Operation on
// the resources of type Resource that Pattern and Name match, from Host.
type Binding struct {
	Resource ResourceType
	Name     string // the resource name, or a prefix of names; "*" (literal): every one
	Pattern  PatternType
	// Principal is who the ACL is about; User:* is every principal.
	Principal auth.Principal
	// Host is the client's IP address, or "*" for every address.
	Host       string
	Operation  Operation
	Permission Permission
}

// ErrInvalid: a binding or filter that cannot be stored or applied.
var ErrInvalid = errors.New("acl: invalid")

// Validate checks b as CreateAcls must: a concrete resource type (topic,
// group, cluster or transactional id) with a non-empty name (kafka-cluster for
// the cluster), a literal or prefixed pattern, a principal, a host (* or an IP
// address), a concrete operation and ALLOW or DENY.
func (b Binding) Validate() error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	switch {
	case b.Resource < ResourceTopic || b.Resource > ResourceTransactionalID:
		return fail("resource type %v: want TOPIC, GROUP, CLUSTER or TRANSACTIONAL_ID", b.Resource)
	case b.Name == "":
		return fail("empty resource name")
	case b.Resource == ResourceCluster && b.Name != ClusterName:
		return fail("the only valid name for the CLUSTER resource is %s", ClusterName)
	case b.Pattern != PatternLiteral && b.Pattern != PatternPrefixed:
		return fail("pattern type %v: want LITERAL or PREFIXED", b.Pattern)
	case b.Principal.Type == "" || b.Principal.Name == "":
		return fail("principal %q: want TYPE:NAME, such as User:alice", b.Principal.String())
	case b.Host != Wildcard && !validHost(b.Host):
		return fail("host %q: want * or an IP address", b.Host)
	case b.Operation < OpAll || b.Operation > OpIdempotentWrite:
		return fail("operation %v", b.Operation)
	case b.Permission != Allow && b.Permission != Deny:
		return fail("permission %v: want ALLOW or DENY", b.Permission)
	}
	return nil
}

func validHost(h string) bool {
	_, err := netip.ParseAddr(h)
	return err == nil
}

// String is the binding as kafka-acls.sh prints it.
func (b Binding) String() string {
	return fmt.Sprintf("(principal=%s, host=%s, operation=%v, permissionType=%v) on ResourcePattern(resourceType=%v, name=%s, patternType=%v)",
		b.Principal, b.Host, b.Operation, b.Permission, b.Resource, b.Name, b.Pattern)
}

// Filter selects bindings, as DescribeAcls and DeleteAcls send it: each field
// narrows the selection unless it is Any (or nil).
type Filter struct {
	Resource ResourceType // ResourceAny: every type
	// Name nil: any name. With Pattern Match, every binding that would apply to
	// a resource of this name (literal, the wildcard, prefixes of it).
	Name       *string
	Pattern    PatternType // PatternAny: any, with Name compared as given
	Principal  *string     // nil: any; else compared as written (User:alice)
	Host       *string     // nil: any; else compared as written
	Operation  Operation   // OpAny: any
	Permission Permission  // PermissionAny: any
}

// Validate refuses a filter with an unknown field, as Kafka does.
func (f Filter) Validate() error {
	switch {
	case f.Resource <= ResourceUnknown || f.Resource > ResourceTransactionalID:
		return fmt.Errorf("%w: filter resource type %v", ErrInvalid, f.Resource)
	case f.Pattern <= PatternUnknown || f.Pattern > PatternPrefixed:
		return fmt.Errorf("%w: filter pattern type %v", ErrInvalid, f.Pattern)
	case f.Operation <= OpUnknown || f.Operation > OpIdempotentWrite:
		return fmt.Errorf("%w: filter operation %v", ErrInvalid, f.Operation)
	case f.Permission <= PermissionUnknown || f.Permission > Allow:
		return fmt.Errorf("%w: filter permission %v", ErrInvalid, f.Permission)
	}
	return nil
}

// Matches reports whether f selects b (Kafka's AclBindingFilter.matches).
func (f Filter) Matches(b Binding) bool {
	if f.Resource != ResourceAny && f.Resource != b.Resource {
		return false
	}
	if f.Pattern != PatternAny && f.Pattern != PatternMatch && f.Pattern != b.Pattern {
		return false
	}
	if f.Name != nil {
		switch name := *f.Name; {
		case f.Pattern == PatternAny || f.Pattern == b.Pattern:
			if name != b.Name {
				return false
			}
		case b.Pattern == PatternLiteral: // Match
			if name != b.Name && b.Name != Wildcard {
				return false
			}
		case !strings.HasPrefix(name, b.Name): // Match, prefixed
			return false
		}
	}
	if f.Principal != nil && *f.Principal != b.Principal.String() {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == PermissionAny || f.Permission == b.Permission
}

// SupportedOperations are the operations Kafka checks on each resource type
// (AclEntry.supportedOperations), in number order: what authorized-operation
// bit fields report, and what skiff acl create accepts.
func SupportedOperations(t ResourceType) []Operation {
	switch t {
	case ResourceTopic:
		return []Operation{OpRead, OpWrite, OpCreate, OpDelete, OpAlter, OpDescribe, OpDescribeConfigs, OpAlterConfigs}
	case ResourceGroup:
		return []Operation{OpRead, OpDelete, OpDescribe, OpDescribeConfigs, OpAlterConfigs}
	case ResourceCluster:
		return []Operation{OpCreate, OpAlter, OpDescribe, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite}
	case ResourceTransactionalID:
		return []Operation{OpWrite, OpDescribe}
	}
	return nil
}
