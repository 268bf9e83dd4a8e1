package acl

import (
	"errors"
	"slices"
	"testing"

	"skiff/auth"
)

func TestParseNames(t *testing.T) {
	ops := map[string]Operation{
		"Read": OpRead, "READ": OpRead, "read": OpRead, "ClusterAction": OpClusterAction, "CLUSTER_ACTION": OpClusterAction,
		"cluster-action": OpClusterAction, "IdempotentWrite": OpIdempotentWrite, "DescribeConfigs": OpDescribeConfigs,
		"AlterConfigs": OpAlterConfigs, "All": OpAll, "Any": OpAny,
	}
	for s, want := range ops {
		if got, err := ParseOperation(s); err != nil || got != want {
			t.Errorf("ParseOperation(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, bad := range []string{"", "UNKNOWN", "Unknown", "CreateTokens", "Reads"} {
		if got, err := ParseOperation(bad); err == nil {
			t.Errorf("ParseOperation(%q) = %v, want an error", bad, got)
		}
	}
	if rt, err := ParseResourceType("TransactionalId"); err != nil || rt != ResourceTransactionalID {
		t.Errorf("TransactionalId = %v, %v", rt, err)
	}
	if rt, err := ParseResourceType("transactional-id"); err != nil || rt != ResourceTransactionalID {
		t.Errorf("transactional-id = %v, %v", rt, err)
	}
	if _, err := ParseResourceType("DelegationToken"); err == nil {
		t.Error("DelegationToken parsed: Skiff has no delegation tokens")
	}
	if pt, err := ParsePatternType("prefixed"); err != nil || pt != PatternPrefixed {
		t.Errorf("prefixed = %v, %v", pt, err)
	}
	if p, err := ParsePermission("Deny"); err != nil || p != Deny {
		t.Errorf("Deny = %v, %v", p, err)
	}
	// Every name prints as Kafka's enum and reads back.
	for op := OpAny; op <= OpIdempotentWrite; op++ {
		if got, err := ParseOperation(op.String()); err != nil || got != op {
			t.Errorf("%v reads back as %v, %v", op, got, err)
		}
	}
	if s := Operation(42).String(); s != "UNKNOWN(42)" {
		t.Errorf("Operation(42) = %s", s)
	}
}

func TestBindingValidate(t *testing.T) {
	good := Binding{Resource: ResourceTopic, Name: "orders", Pattern: PatternLiteral, Principal: auth.User("alice"), Host: "*", Operation: OpRead, Permission: Allow}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*Binding){
		"resource any":        func(b *Binding) { b.Resource = ResourceAny },
		"resource unknown":    func(b *Binding) { b.Resource = ResourceUnknown },
		"delegation token":    func(b *Binding) { b.Resource = 6 },
		"empty name":          func(b *Binding) { b.Name = "" },
		"cluster named wrong": func(b *Binding) { b.Resource, b.Name = ResourceCluster, "mine" },
		"pattern any":         func(b *Binding) { b.Pattern = PatternAny },
		"pattern match":       func(b *Binding) { b.Pattern = PatternMatch },
		"no principal type":   func(b *Binding) { b.Principal = auth.Principal{Name: "alice"} },
		"no principal name":   func(b *Binding) { b.Principal = auth.Principal{Type: "User"} },
		"host name":           func(b *Binding) { b.Host = "localhost" },
		"empty host":          func(b *Binding) { b.Host = "" },
		"operation any":       func(b *Binding) { b.Operation = OpAny },
		"create tokens":       func(b *Binding) { b.Operation = 13 },
		"permission any":      func(b *Binding) { b.Permission = PermissionAny },
	} {
		b := good
		change(&b)
		if err := b.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate = %v, want ErrInvalid", name, err)
		}
	}
	for _, ok := range []func(*Binding){
		func(b *Binding) { b.Resource, b.Name = ResourceCluster, ClusterName },
		func(b *Binding) { b.Pattern, b.Name = PatternPrefixed, "ord" },
		func(b *Binding) { b.Host = "::1" },
		func(b *Binding) { b.Operation, b.Permission = OpAll, Deny },
		func(b *Binding) { b.Principal = WildcardPrincipal },
	} {
		b := good
		ok(&b)
		if err := b.Validate(); err != nil {
			t.Errorf("%v: %v", b, err)
		}
	}
}

// TestFilterMatches is Kafka's AclBindingFilter: ANY fields, exact names, and
// MATCH, which selects every ACL that applies to a resource name.
func TestFilterMatches(t *testing.T) {
	str := func(s string) *string { return &s }
	lit := acl(t, "ALLOW User:alice 10.0.0.1 READ TOPIC LITERAL orders")
	wild := acl(t, "DENY User:bob * WRITE TOPIC LITERAL *")
	pre := acl(t, "ALLOW User:alice * DESCRIBE TOPIC PREFIXED ord")
	grp := acl(t, "ALLOW User:alice * READ GROUP LITERAL orders")
	all := []Binding{lit, wild, pre, grp}
	every := Filter{Resource: ResourceAny, Pattern: PatternAny, Operation: OpAny, Permission: PermissionAny}
	cases := []struct {
		name string
		f    func(*Filter)
		want []Binding
	}{
		{"everything", func(*Filter) {}, all},
		{"topics", func(f *Filter) { f.Resource = ResourceTopic }, []Binding{lit, wild, pre}},
		{"name, any pattern", func(f *Filter) { f.Name = str("orders") }, []Binding{lit, grp}},
		{"name *, any pattern: the wildcard ACL only", func(f *Filter) { f.Name = str("*") }, []Binding{wild}},
		{"literal", func(f *Filter) { f.Pattern = PatternLiteral }, []Binding{lit, wild, grp}},
		{"prefixed ord", func(f *Filter) { f.Pattern, f.Name = PatternPrefixed, str("ord") }, []Binding{pre}},
		{"prefixed orders: not the prefix ord", func(f *Filter) { f.Pattern, f.Name = PatternPrefixed, str("orders") }, nil},
		{"match orders", func(f *Filter) { f.Pattern, f.Name = PatternMatch, str("orders") }, all},
		{"match topic orders", func(f *Filter) { f.Resource, f.Pattern, f.Name = ResourceTopic, PatternMatch, str("orders") }, []Binding{lit, wild, pre}},
		{"match or: only the wildcard", func(f *Filter) { f.Pattern, f.Name = PatternMatch, str("or") }, []Binding{wild}},
		{"match, any name", func(f *Filter) { f.Pattern = PatternMatch }, all},
		{"principal", func(f *Filter) { f.Principal = str("User:bob") }, []Binding{wild}},
		{"principal as written", func(f *Filter) { f.Principal = str("bob") }, nil},
		{"host", func(f *Filter) { f.Host = str("10.0.0.1") }, []Binding{lit}},
		{"host *", func(f *Filter) { f.Host = str("*") }, []Binding{wild, pre, grp}},
		{"operation", func(f *Filter) { f.Operation = OpRead }, []Binding{lit, grp}},
		{"operation ALL is not any", func(f *Filter) { f.Operation = OpAll }, nil},
		{"permission", func(f *Filter) { f.Permission = Deny }, []Binding{wild}},
	}
	for _, c := range cases {
		f := every
		c.f(&f)
		if err := f.Validate(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []Binding
		for _, b := range all {
			if f.Matches(b) {
				got = append(got, b)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: matched %v, want %v", c.name, got, c.want)
		}
	}
	for name, bad := range map[string]func(*Filter){
		"unknown resource":   func(f *Filter) { f.Resource = ResourceUnknown },
		"unknown pattern":    func(f *Filter) { f.Pattern = PatternUnknown },
		"unknown operation":  func(f *Filter) { f.Operation = OpUnknown },
		"unknown permission": func(f *Filter) { f.Permission = PermissionUnknown },
		"pattern 9":          func(f *Filter) { f.Pattern = 9 },
	} {
		f := every
		bad(&f)
		if err := f.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
}

func TestSet(t *testing.T) {
	a := acl(t, "ALLOW User:alice * READ TOPIC LITERAL orders")
	b := acl(t, "DENY User:bob * ALL GROUP PREFIXED g")
	c := acl(t, "ALLOW User:alice * ALTER CLUSTER LITERAL kafka-cluster")
	invalid := Binding{Resource: ResourceTopic, Name: "", Pattern: PatternLiteral}
	s := NewSet([]Binding{c, b, a, invalid, a})
	if got, want := s.Bindings(), []Binding{a, b, c}; !slices.Equal(got, want) {
		t.Fatalf("Bindings = %v, want %v (sorted, without repeats or invalid ones)", got, want)
	}
	if s.Len() != 3 {
		t.Fatalf("Len = %d", s.Len())
	}
	f := Filter{Resource: ResourceAny, Pattern: PatternAny, Operation: OpAny, Permission: Allow}
	if got := s.Select(f); !slices.Equal(got, []Binding{a, c}) {
		t.Fatalf("Select(ALLOW) = %v", got)
	}
	var none *Set
	if none.Len() != 0 || none.Bindings() != nil || none.Select(f) != nil {
		t.Fatal("a nil Set is not empty")
	}
	if d := New(Config{AllowIfNoACL: true}).Authorize(none, Client{Principal: alice}, OpRead, ResourceTopic, "x"); !d.Allowed || d.Rule != RuleNoACL {
		t.Fatalf("nil Set: %v", d)
	}
}
