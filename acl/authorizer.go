package acl

import (
	"fmt"
	"net/netip"
	"strings"

	"skiff/auth"
)

// Config configures an Authorizer.
type Config struct {
	// SuperUsers may do everything, whatever the ACLs say (super.users).
	SuperUsers []auth.Principal
	// AllowIfNoACL allows an operation on a resource that no ACL names at all
	// (allow.everyone.if.no.acl.found; default false: denied).
	AllowIfNoACL bool
	// InterBroker are the principals followers fetch from their leaders as (the
	// inter-broker user, the node certificate's principal): they may do
	// CLUSTER_ACTION on the cluster without an ACL, and no DENY takes it away,
	// so replication cannot be switched off by an ACL. They may do nothing else
	// without an ACL.
	InterBroker []auth.Principal
}

// Authorizer decides requests against a Set of ACLs as Kafka's
// StandardAuthorizer does:
//   - super users may do everything;
//   - otherwise a DENY ACL that matches wins over every ALLOW;
//   - an ALLOW ACL that matches allows; READ, WRITE, DELETE and ALTER imply
//     DESCRIBE, and ALTER_CONFIGS implies DESCRIBE_CONFIGS (for ALLOW only: a
//     DENY of READ does not deny DESCRIBE); ALL matches every operation;
//   - a resource that no ACL applies to (of any principal or operation) is
//     allowed only with AllowIfNoACL; otherwise the answer is no.
//
// An ACL matches when its resource pattern applies to the resource (the same
// literal name, the literal "*", or a prefix of the name), its principal is the
// client's or User:*, its host is the client's address or "*", and its
// operation is the one asked for (or implies it, or is ALL).
type Authorizer struct {
	super        map[auth.Principal]bool
	interBroker  map[auth.Principal]bool
	allowIfNoACL bool
}

// New returns an Authorizer.
func New(cfg Config) *Authorizer {
	a := &Authorizer{super: map[auth.Principal]bool{}, interBroker: map[auth.Principal]bool{}, allowIfNoACL: cfg.AllowIfNoACL}
	for _, p := range cfg.SuperUsers {
		a.super[p] = true
	}
	for _, p := range cfg.InterBroker {
		a.interBroker[p] = true
	}
	return a
}

// Client is who asks: the connection's principal and its IP address.
type Client struct {
	Principal auth.Principal
	Addr      netip.Addr
}

// Rule is why a Decision was made.
type Rule int8

// Rules.
const (
	RuleSuperUser   Rule = iota + 1 // the principal is a super user
	RuleInterBroker                 // CLUSTER_ACTION of an inter-broker principal
	RuleAllowACL                    // an ALLOW ACL matched (Decision.ACL)
	RuleDenyACL                     // a DENY ACL matched (Decision.ACL)
	RuleNoACL                       // no ACL applies to the resource: AllowIfNoACL decides
	RuleNoMatch                     // ACLs apply to the resource, none allows the client
)

// Decision is an authorization's answer and why.
type Decision struct {
	Allowed bool
	Rule    Rule
	ACL     Binding // the deciding ACL, for RuleAllowACL and RuleDenyACL
}

// String says why, for logs.
func (d Decision) String() string {
	switch d.Rule {
	case RuleSuperUser:
		return "super user"
	case RuleInterBroker:
		return "inter-broker principal"
	case RuleAllowACL, RuleDenyACL:
		return "ACL " + d.ACL.String()
	case RuleNoACL:
		if d.Allowed {
			return "no ACL on the resource (allow-everyone-if-no-acl-found)"
		}
		return "no ACL on the resource"
	case RuleNoMatch:
		return "no ACL allows it"
	}
	return fmt.Sprintf("Rule(%d)", d.Rule)
}

// Authorize decides whether c may do op on the resource (t, name) under the
// ACLs of s.
func (a *Authorizer) Authorize(s *Set, c Client, op Operation, t ResourceType, name string) Decision {
	if a.super[c.Principal] {
		return Decision{Allowed: true, Rule: RuleSuperUser}
	}
	if op == OpClusterAction && t == ResourceCluster && a.interBroker[c.Principal] {
		return Decision{Allowed: true, Rule: RuleInterBroker}
	}
	addr := c.Addr.Unmap()
	var d Decision
	applies := false
	s.forResource(t, name, func(e *entry) bool {
		applies = true
		switch matches(e, c.Principal, addr, op) {
		case Deny:
			d = Decision{Rule: RuleDenyACL, ACL: e.b}
			return false
		case Allow:
			if d.Rule == 0 {
				d = Decision{Allowed: true, Rule: RuleAllowACL, ACL: e.b}
			}
		}
		return true
	})
	switch {
	case d.Rule != 0:
		return d
	case !applies:
		return Decision{Allowed: a.allowIfNoACL, Rule: RuleNoACL}
	}
	return Decision{Rule: RuleNoMatch}
}

// matches applies one ACL, whose resource pattern applies, to a client and an
// operation: Allow or Deny if it decides, PermissionUnknown if it does not
// concern them (Kafka's StandardAuthorizerData.findResult).
func matches(e *entry, p auth.Principal, addr netip.Addr, op Operation) Permission {
	b := &e.b
	if b.Principal != p && b.Principal != WildcardPrincipal {
		return PermissionUnknown
	}
	if b.Host != Wildcard && e.addr != addr {
		return PermissionUnknown
	}
	if b.Operation != OpAll && b.Operation != op && !(b.Permission == Allow && implies(b.Operation, op)) {
		return PermissionUnknown
	}
	return b.Permission
}

// implies reports whether an ALLOW of have allows want too: READ, WRITE,
// DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS.
func implies(have, want Operation) bool {
	switch want {
	case OpDescribe:
		return have == OpRead || have == OpWrite || have == OpDelete || have == OpAlter
	case OpDescribeConfigs:
		return have == OpAlterConfigs
	}
	return false
}

// AuthorizeAny decides whether c may do op on at least one resource of type t
// (Kafka's Authorizer.authorizeByResourceType, KIP-679: an idempotent producer
// needs WRITE on some topic): a super user may; so may a client allowed op on a
// resource no ACL names specially (Kafka asks for the name "hardcode", which
// the wildcard and AllowIfNoACL decide); otherwise a client with an ALLOW ACL
// for op (or ALL) of a literal or prefixed pattern that no DENY ACL of the same
// literal name or of a prefix of it takes away. DENY of the literal "*" denies.
// Implied operations do not count here.
func (a *Authorizer) AuthorizeAny(s *Set, c Client, op Operation, t ResourceType) bool {
	if a.Authorize(s, c, op, t, "hardcode").Allowed {
		return true
	}
	addr := c.Addr.Unmap()
	denyLiteral, denyPrefix := map[string]bool{}, map[string]bool{}
	var allowLiteral, allowPrefix []string
	allowWildcard := false
	for _, b := range s.Bindings() {
		if b.Resource != t {
			continue
		}
		e := entry{b: b}
		if b.Host != Wildcard {
			e.addr, _ = netip.ParseAddr(b.Host)
			e.addr = e.addr.Unmap()
		}
		if b.Operation != op && b.Operation != OpAll {
			continue
		}
		switch matches(&e, c.Principal, addr, op) {
		case Deny:
			if b.Pattern == PatternLiteral {
				if b.Name == Wildcard {
					return false
				}
				denyLiteral[b.Name] = true
			} else {
				denyPrefix[b.Name] = true
			}
		case Allow:
			if b.Pattern == PatternLiteral {
				if b.Name == Wildcard {
					allowWildcard = true
					continue
				}
				allowLiteral = append(allowLiteral, b.Name)
			} else {
				allowPrefix = append(allowPrefix, b.Name)
			}
		}
	}
	if allowWildcard {
		return true
	}
	deniedByPrefix := func(name string) bool {
		for i := 1; i <= len(name); i++ {
			if denyPrefix[name[:i]] {
				return true
			}
		}
		return false
	}
	for _, n := range allowLiteral {
		if !denyLiteral[n] && !deniedByPrefix(n) {
			return true
		}
	}
	for _, n := range allowPrefix {
		if !deniedByPrefix(n) {
			return true
		}
	}
	return false
}

// AuthorizedOperations is the bit field of the operations of
// SupportedOperations(t) that c may do on the resource (t, name): bit n set for
// the operation numbered n, as Metadata and DescribeGroups report them.
func (a *Authorizer) AuthorizedOperations(s *Set, c Client, t ResourceType, name string) int32 {
	var bits int32
	for _, op := range SupportedOperations(t) {
		if a.Authorize(s, c, op, t, name).Allowed {
			bits |= 1 << op
		}
	}
	return bits
}

// ParsePrincipals reads a super-users list as Kafka writes it, principals
// separated by semicolons (User:alice;User:bob); empty items are skipped.
func ParsePrincipals(s string) ([]auth.Principal, error) {
	var out []auth.Principal
	for _, item := range strings.Split(s, ";") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		p, err := auth.ParsePrincipal(item)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
