package acl

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"skiff/auth"
)

// acl reads "PERMISSION PRINCIPAL HOST OPERATION RESOURCE PATTERN NAME", such as
// "ALLOW User:alice * READ TOPIC LITERAL orders".
func acl(t testing.TB, s string) Binding {
	t.Helper()
	f := strings.Fields(s)
	if len(f) != 7 {
		t.Fatalf("acl %q: want 7 fields", s)
	}
	perm, err1 := ParsePermission(f[0])
	p, err2 := auth.ParsePrincipal(f[1])
	op, err3 := ParseOperation(f[3])
	rt, err4 := ParseResourceType(f[4])
	pt, err5 := ParsePatternType(f[5])
	for _, err := range []error{err1, err2, err3, err4, err5} {
		if err != nil {
			t.Fatalf("acl %q: %v", s, err)
		}
	}
	b := Binding{Resource: rt, Name: f[6], Pattern: pt, Principal: p, Host: f[2], Operation: op, Permission: perm}
	if err := b.Validate(); err != nil {
		t.Fatalf("acl %q: %v", s, err)
	}
	return b
}

func set(t testing.TB, acls ...string) *Set {
	var bs []Binding
	for _, s := range acls {
		bs = append(bs, acl(t, s))
	}
	return NewSet(bs)
}

var (
	alice   = auth.User("alice")
	bob     = auth.User("bob")
	admin   = auth.User("admin")
	broker  = auth.User("broker")
	clientA = netip.MustParseAddr("10.0.0.1")
)

// TestAuthorize is Kafka's StandardAuthorizer decided case by case: patterns
// (literal, the wildcard, prefixed), DENY over ALLOW, implied operations,
// principals and hosts, super users, inter-broker principals and
// allow-everyone-if-no-acl-found.
func TestAuthorize(t *testing.T) {
	type tc struct {
		name   string
		acls   []string
		noACL  bool           // AllowIfNoACL
		who    auth.Principal // default alice
		addr   string         // default 10.0.0.1
		op     string         // operation asked
		res    string         // RESOURCE:name
		want   bool
		rule   Rule
		wantBy int // index of the deciding ACL, for ACL rules
	}
	allowReadOrders := "ALLOW User:alice * READ TOPIC LITERAL orders"
	cases := []tc{
		{name: "no ACLs: denied", op: "READ", res: "TOPIC:orders", rule: RuleNoACL},
		{name: "no ACLs, allow-everyone: allowed", noACL: true, op: "READ", res: "TOPIC:orders", want: true, rule: RuleNoACL},
		{name: "literal allows its name", acls: []string{allowReadOrders}, op: "READ", res: "TOPIC:orders", want: true, rule: RuleAllowACL},
		{name: "literal does not allow a longer name", acls: []string{allowReadOrders}, op: "READ", res: "TOPIC:orders2", rule: RuleNoACL},
		{name: "literal does not allow a shorter name", acls: []string{allowReadOrders}, op: "READ", res: "TOPIC:order", rule: RuleNoACL},
		{name: "another name under allow-everyone", acls: []string{allowReadOrders}, noACL: true, op: "READ", res: "TOPIC:payments", want: true, rule: RuleNoACL},
		{name: "ACLs of others apply: no allow-everyone", acls: []string{"ALLOW User:bob * READ TOPIC LITERAL orders"}, noACL: true, op: "READ", res: "TOPIC:orders", rule: RuleNoMatch},
		{name: "another operation on the resource", acls: []string{allowReadOrders}, noACL: true, op: "WRITE", res: "TOPIC:orders", rule: RuleNoMatch},
		{name: "same name, another resource type", acls: []string{allowReadOrders}, op: "READ", res: "GROUP:orders", rule: RuleNoACL},
		{name: "wildcard allows every name", acls: []string{"ALLOW User:alice * READ TOPIC LITERAL *"}, op: "READ", res: "TOPIC:anything", want: true, rule: RuleAllowACL},
		{name: "wildcard allows the name *", acls: []string{"ALLOW User:alice * READ TOPIC LITERAL *"}, op: "READ", res: "TOPIC:*", want: true, rule: RuleAllowACL},
		{name: "prefixed * is a prefix, not a wildcard", acls: []string{"ALLOW User:alice * READ TOPIC PREFIXED *"}, op: "READ", res: "TOPIC:orders", rule: RuleNoACL},
		{name: "prefixed * allows names starting with *", acls: []string{"ALLOW User:alice * READ TOPIC PREFIXED *"}, op: "READ", res: "TOPIC:*x", want: true, rule: RuleAllowACL},
		{name: "prefix allows a longer name", acls: []string{"ALLOW User:alice * READ TOPIC PREFIXED ord"}, op: "READ", res: "TOPIC:orders", want: true, rule: RuleAllowACL},
		{name: "prefix allows its own name", acls: []string{"ALLOW User:alice * READ TOPIC PREFIXED ord"}, op: "READ", res: "TOPIC:ord", want: true, rule: RuleAllowACL},
		{name: "prefix does not allow a shorter name", acls: []string{"ALLOW User:alice * READ TOPIC PREFIXED ord"}, op: "READ", res: "TOPIC:or", rule: RuleNoACL},
		{name: "prefix is anchored at the start", acls: []string{"ALLOW User:alice * READ TOPIC PREFIXED ord"}, op: "READ", res: "TOPIC:xorders", rule: RuleNoACL},
		{name: "several prefix lengths", acls: []string{"ALLOW User:bob * READ TOPIC PREFIXED o", "ALLOW User:alice * READ TOPIC PREFIXED orde", "ALLOW User:bob * READ TOPIC PREFIXED orders-eu"},
			op: "READ", res: "TOPIC:orders-us", want: true, rule: RuleAllowACL, wantBy: 1},

		{name: "DENY literal over ALLOW literal", acls: []string{allowReadOrders, "DENY User:alice * READ TOPIC LITERAL orders"}, op: "READ", res: "TOPIC:orders", rule: RuleDenyACL, wantBy: 1},
		{name: "DENY prefixed over ALLOW literal", acls: []string{allowReadOrders, "DENY User:alice * READ TOPIC PREFIXED or"}, op: "READ", res: "TOPIC:orders", rule: RuleDenyACL, wantBy: 1},
		{name: "DENY literal over ALLOW prefixed", acls: []string{"ALLOW User:alice * READ TOPIC PREFIXED or", "DENY User:alice * READ TOPIC LITERAL orders"}, op: "READ", res: "TOPIC:orders", rule: RuleDenyACL, wantBy: 1},
		{name: "DENY wildcard over ALLOW literal", acls: []string{allowReadOrders, "DENY User:alice * READ TOPIC LITERAL *"}, op: "READ", res: "TOPIC:orders", rule: RuleDenyACL, wantBy: 1},
		{name: "DENY of every principal", acls: []string{allowReadOrders, "DENY User:* * READ TOPIC LITERAL orders"}, op: "READ", res: "TOPIC:orders", rule: RuleDenyACL, wantBy: 1},
		{name: "DENY ALL denies READ", acls: []string{allowReadOrders, "DENY User:alice * ALL TOPIC LITERAL orders"}, op: "READ", res: "TOPIC:orders", rule: RuleDenyACL, wantBy: 1},
		{name: "DENY of another host does not apply", acls: []string{allowReadOrders, "DENY User:alice 10.9.9.9 READ TOPIC LITERAL orders"}, op: "READ", res: "TOPIC:orders", want: true, rule: RuleAllowACL},
		{name: "DENY of another principal does not apply", acls: []string{allowReadOrders, "DENY User:bob * READ TOPIC LITERAL orders"}, op: "READ", res: "TOPIC:orders", want: true, rule: RuleAllowACL},
		{name: "DENY of another operation does not apply", acls: []string{allowReadOrders, "DENY User:alice * WRITE TOPIC LITERAL orders"}, op: "READ", res: "TOPIC:orders", want: true, rule: RuleAllowACL},
		{name: "DENY of a longer prefix does not apply", acls: []string{allowReadOrders, "DENY User:alice * READ TOPIC PREFIXED orders-"}, op: "READ", res: "TOPIC:orders", want: true, rule: RuleAllowACL},

		{name: "ALLOW ALL allows any operation", acls: []string{"ALLOW User:alice * ALL CLUSTER LITERAL kafka-cluster"}, op: "CLUSTER_ACTION", res: "CLUSTER:kafka-cluster", want: true, rule: RuleAllowACL},
		{name: "READ implies DESCRIBE", acls: []string{allowReadOrders}, op: "DESCRIBE", res: "TOPIC:orders", want: true, rule: RuleAllowACL},
		{name: "WRITE implies DESCRIBE", acls: []string{"ALLOW User:alice * WRITE TOPIC LITERAL orders"}, op: "DESCRIBE", res: "TOPIC:orders", want: true, rule: RuleAllowACL},
		{name: "DELETE implies DESCRIBE", acls: []string{"ALLOW User:alice * DELETE GROUP LITERAL g"}, op: "DESCRIBE", res: "GROUP:g", want: true, rule: RuleAllowACL},
		{name: "ALTER implies DESCRIBE", acls: []string{"ALLOW User:alice * ALTER CLUSTER LITERAL kafka-cluster"}, op: "DESCRIBE", res: "CLUSTER:kafka-cluster", want: true, rule: RuleAllowACL},
		{name: "CREATE does not imply DESCRIBE", acls: []string{"ALLOW User:alice * CREATE TOPIC LITERAL orders"}, op: "DESCRIBE", res: "TOPIC:orders", rule: RuleNoMatch},
		{name: "DESCRIBE does not imply READ", acls: []string{"ALLOW User:alice * DESCRIBE TOPIC LITERAL orders"}, op: "READ", res: "TOPIC:orders", rule: RuleNoMatch},
		{name: "ALTER_CONFIGS implies DESCRIBE_CONFIGS", acls: []string{"ALLOW User:alice * ALTER_CONFIGS TOPIC LITERAL orders"}, op: "DESCRIBE_CONFIGS", res: "TOPIC:orders", want: true, rule: RuleAllowACL},
		{name: "ALTER_CONFIGS does not imply DESCRIBE", acls: []string{"ALLOW User:alice * ALTER_CONFIGS TOPIC LITERAL orders"}, op: "DESCRIBE", res: "TOPIC:orders", rule: RuleNoMatch},
		{name: "DESCRIBE_CONFIGS does not imply ALTER_CONFIGS", acls: []string{"ALLOW User:alice * DESCRIBE_CONFIGS TOPIC LITERAL orders"}, op: "ALTER_CONFIGS", res: "TOPIC:orders", rule: RuleNoMatch},
		{name: "DENY READ does not deny DESCRIBE", acls: []string{"DENY User:alice * READ TOPIC LITERAL orders", "ALLOW User:alice * DESCRIBE TOPIC LITERAL orders"}, op: "DESCRIBE", res: "TOPIC:orders", want: true, rule: RuleAllowACL, wantBy: 1},
		{name: "DENY READ alone leaves DESCRIBE unallowed", acls: []string{"DENY User:alice * READ TOPIC LITERAL orders"}, noACL: true, op: "DESCRIBE", res: "TOPIC:orders", rule: RuleNoMatch},
		{name: "WRITE on any topic is not IDEMPOTENT_WRITE on the cluster", acls: []string{"ALLOW User:alice * WRITE TOPIC LITERAL *"}, op: "IDEMPOTENT_WRITE", res: "CLUSTER:kafka-cluster", rule: RuleNoACL},

		{name: "User:* allows everyone", acls: []string{"ALLOW User:* * READ TOPIC LITERAL orders"}, op: "READ", res: "TOPIC:orders", want: true, rule: RuleAllowACL},
		{name: "principal type counts", acls: []string{"ALLOW Group:alice * READ TOPIC LITERAL orders"}, op: "READ", res: "TOPIC:orders", rule: RuleNoMatch},
		{name: "host matches", acls: []string{"ALLOW User:alice 10.0.0.1 READ TOPIC LITERAL orders"}, op: "READ", res: "TOPIC:orders", want: true, rule: RuleAllowACL},
		{name: "another host", acls: []string{"ALLOW User:alice 10.0.0.1 READ TOPIC LITERAL orders"}, addr: "10.0.0.2", op: "READ", res: "TOPIC:orders", rule: RuleNoMatch},
		{name: "IPv4-mapped client address", acls: []string{"ALLOW User:alice 10.0.0.1 READ TOPIC LITERAL orders"}, addr: "::ffff:10.0.0.1", op: "READ", res: "TOPIC:orders", want: true, rule: RuleAllowACL},
		{name: "IPv6 host written in full", acls: []string{"ALLOW User:alice 0:0:0:0:0:0:0:1 READ TOPIC LITERAL orders"}, addr: "::1", op: "READ", res: "TOPIC:orders", want: true, rule: RuleAllowACL},

		{name: "super user", who: admin, op: "ALTER", res: "CLUSTER:kafka-cluster", want: true, rule: RuleSuperUser},
		{name: "super user despite DENY", who: admin, acls: []string{"DENY User:admin * ALL TOPIC LITERAL *"}, op: "DELETE", res: "TOPIC:orders", want: true, rule: RuleSuperUser},
		{name: "inter-broker CLUSTER_ACTION", who: broker, op: "CLUSTER_ACTION", res: "CLUSTER:kafka-cluster", want: true, rule: RuleInterBroker},
		{name: "inter-broker CLUSTER_ACTION despite DENY", who: broker, acls: []string{"DENY User:broker * ALL CLUSTER LITERAL kafka-cluster"}, op: "CLUSTER_ACTION", res: "CLUSTER:kafka-cluster", want: true, rule: RuleInterBroker},
		{name: "inter-broker may not do more", who: broker, op: "ALTER", res: "CLUSTER:kafka-cluster", rule: RuleNoACL},
		{name: "inter-broker may not read topics", who: broker, op: "READ", res: "TOPIC:orders", rule: RuleNoACL},
		{name: "ANONYMOUS is a principal like others", who: auth.Anonymous, acls: []string{"ALLOW User:ANONYMOUS * CREATE CLUSTER LITERAL kafka-cluster"}, op: "CREATE", res: "CLUSTER:kafka-cluster", want: true, rule: RuleAllowACL},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := New(Config{SuperUsers: []auth.Principal{admin}, InterBroker: []auth.Principal{broker}, AllowIfNoACL: c.noACL})
			who := c.who
			if who == (auth.Principal{}) {
				who = alice
			}
			addr := clientA
			if c.addr != "" {
				addr = netip.MustParseAddr(c.addr)
			}
			op, err := ParseOperation(c.op)
			if err != nil {
				t.Fatal(err)
			}
			rtName, name, _ := strings.Cut(c.res, ":")
			rt, err := ParseResourceType(rtName)
			if err != nil {
				t.Fatal(err)
			}
			s := set(t, c.acls...)
			d := a.Authorize(s, Client{Principal: who, Addr: addr}, op, rt, name)
			if d.Allowed != c.want || d.Rule != c.rule {
				t.Fatalf("%v %v %v:%s = %v (%v); want allowed=%v rule %v", who, op, rt, name, d.Allowed, d, c.want, c.rule)
			}
			if c.rule == RuleAllowACL || c.rule == RuleDenyACL {
				if want := acl(t, c.acls[c.wantBy]); d.ACL != want {
					t.Fatalf("decided by %v, want %v", d.ACL, want)
				}
			}
			if ref := reference(a, c.acls, t, who, addr, op, rt, name); ref != c.want {
				t.Fatalf("the reference authorizer says %v", ref)
			}
		})
	}
}

// reference decides as Authorize must, over every ACL without an index: the
// specification TestAuthorizeRandom compares the index with.
func reference(a *Authorizer, acls []string, t testing.TB, who auth.Principal, addr netip.Addr, op Operation, rt ResourceType, name string) bool {
	var bs []Binding
	for _, s := range acls {
		bs = append(bs, acl(t, s))
	}
	return referenceBindings(a, bs, who, addr, op, rt, name)
}

func referenceBindings(a *Authorizer, bs []Binding, who auth.Principal, addr netip.Addr, op Operation, rt ResourceType, name string) bool {
	if a.super[who] || (op == OpClusterAction && rt == ResourceCluster && a.interBroker[who]) {
		return true
	}
	applies, allowed := false, false
	for _, b := range bs {
		if b.Resource != rt {
			continue
		}
		if !(b.Pattern == PatternLiteral && (b.Name == name || b.Name == "*")) && !(b.Pattern == PatternPrefixed && strings.HasPrefix(name, b.Name)) {
			continue
		}
		applies = true
		if b.Principal != who && b.Principal.String() != "User:*" {
			continue
		}
		if b.Host != "*" && netip.MustParseAddr(b.Host).Unmap() != addr.Unmap() {
			continue
		}
		opOK := b.Operation == OpAll || b.Operation == op
		if b.Permission == Allow {
			switch op {
			case OpDescribe:
				opOK = opOK || b.Operation == OpRead || b.Operation == OpWrite || b.Operation == OpDelete || b.Operation == OpAlter
			case OpDescribeConfigs:
				opOK = opOK || b.Operation == OpAlterConfigs
			}
		}
		if !opOK {
			continue
		}
		if b.Permission == Deny {
			return false
		}
		allowed = true
	}
	if !applies {
		return a.allowIfNoACL
	}
	return allowed
}

// TestAuthorizeRandom compares the indexed Authorize with the reference over
// random ACL sets built from few names, prefixes, principals and hosts, so that
// patterns overlap often.
func TestAuthorizeRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "ab", "abc", "abd", "b", "*", "ba"}
	principals := []auth.Principal{alice, bob, WildcardPrincipal, auth.Anonymous}
	hosts := []string{"*", "10.0.0.1", "10.0.0.2", "::1"}
	types := []ResourceType{ResourceTopic, ResourceGroup, ResourceTransactionalID}
	ops := []Operation{OpAll, OpRead, OpWrite, OpCreate, OpDelete, OpAlter, OpDescribe, OpDescribeConfigs, OpAlterConfigs}
	pick := func(n int) int { return r.IntN(n) }
	for round := range 2000 {
		var bs []Binding
		for range pick(12) {
			b := Binding{Resource: types[pick(len(types))], Name: names[pick(len(names))], Pattern: PatternLiteral,
				Principal: principals[pick(len(principals))], Host: hosts[pick(len(hosts))], Operation: ops[pick(len(ops))], Permission: Allow}
			if pick(3) == 0 {
				b.Pattern = PatternPrefixed
			}
			if pick(4) == 0 {
				b.Permission = Deny
			}
			bs = append(bs, b)
		}
		a := New(Config{AllowIfNoACL: pick(2) == 0})
		s := NewSet(bs)
		for range 20 {
			who := principals[pick(len(principals)-1)] // never User:* itself
			addr := netip.MustParseAddr([]string{"10.0.0.1", "10.0.0.2", "::1"}[pick(3)])
			op := ops[1+pick(len(ops)-1)]
			rt := types[pick(len(types))]
			name := names[pick(len(names))] + []string{"", "x", "c"}[pick(3)]
			got := a.Authorize(s, Client{Principal: who, Addr: addr}, op, rt, name).Allowed
			if want := referenceBindings(a, bs, who, addr, op, rt, name); got != want {
				t.Fatalf("round %d: %v %v %v:%s from %v = %v, reference %v; ACLs:\n%s", round, who, op, rt, name, addr, got, want, fmtBindings(bs))
			}
		}
	}
}

func fmtBindings(bs []Binding) string {
	var sb strings.Builder
	for _, b := range bs {
		fmt.Fprintln(&sb, b)
	}
	return sb.String()
}

// TestAuthorizeAny is KIP-679's check (InitProducerId without a transactional
// id: WRITE on some topic), as Kafka's Authorizer.authorizeByResourceType.
func TestAuthorizeAny(t *testing.T) {
	cases := []struct {
		name  string
		acls  []string
		noACL bool
		who   auth.Principal
		op    Operation
		want  bool
	}{
		{name: "no ACLs", op: OpWrite},
		{name: "no ACLs, allow-everyone", noACL: true, op: OpWrite, want: true},
		{name: "super user", who: admin, op: OpWrite, want: true},
		{name: "super user despite a DENY of every topic", who: admin, acls: []string{"DENY User:admin * WRITE TOPIC LITERAL *"}, op: OpWrite, want: true},
		{name: "WRITE on one topic", acls: []string{"ALLOW User:alice * WRITE TOPIC LITERAL t1"}, op: OpWrite, want: true},
		{name: "WRITE on a prefix", acls: []string{"ALLOW User:alice * WRITE TOPIC PREFIXED t"}, op: OpWrite, want: true},
		{name: "ALL on one topic", acls: []string{"ALLOW User:alice * ALL TOPIC LITERAL t1"}, op: OpWrite, want: true},
		{name: "WRITE for every principal", acls: []string{"ALLOW User:* * WRITE TOPIC LITERAL t1"}, op: OpWrite, want: true},
		{name: "WRITE on every topic", acls: []string{"ALLOW User:alice * WRITE TOPIC LITERAL *"}, op: OpWrite, want: true},
		{name: "READ is not WRITE", acls: []string{"ALLOW User:alice * READ TOPIC LITERAL t1"}, op: OpWrite},
		{name: "WRITE on a group is not on a topic", acls: []string{"ALLOW User:alice * WRITE GROUP LITERAL t1"}, op: OpWrite},
		{name: "WRITE of another principal", acls: []string{"ALLOW User:bob * WRITE TOPIC LITERAL t1"}, op: OpWrite},
		{name: "WRITE from another host", acls: []string{"ALLOW User:alice 10.9.9.9 WRITE TOPIC LITERAL t1"}, op: OpWrite},
		{name: "denied by the same literal", acls: []string{"ALLOW User:alice * WRITE TOPIC LITERAL t1", "DENY User:alice * WRITE TOPIC LITERAL t1"}, op: OpWrite},
		{name: "denied by a prefix of the literal", acls: []string{"ALLOW User:alice * WRITE TOPIC LITERAL t1", "DENY User:alice * WRITE TOPIC PREFIXED t"}, op: OpWrite},
		{name: "a longer denied prefix leaves some", acls: []string{"ALLOW User:alice * WRITE TOPIC PREFIXED t", "DENY User:alice * WRITE TOPIC PREFIXED t1"}, op: OpWrite, want: true},
		{name: "a shorter denied prefix leaves none", acls: []string{"ALLOW User:alice * WRITE TOPIC PREFIXED t1", "DENY User:alice * ALL TOPIC PREFIXED t"}, op: OpWrite},
		{name: "a denied literal leaves the prefix", acls: []string{"ALLOW User:alice * WRITE TOPIC PREFIXED t", "DENY User:alice * WRITE TOPIC LITERAL t"}, op: OpWrite, want: true},
		{name: "one of two denied", acls: []string{"ALLOW User:alice * WRITE TOPIC LITERAL t1", "ALLOW User:alice * WRITE TOPIC LITERAL t2", "DENY User:alice * WRITE TOPIC LITERAL t1"}, op: OpWrite, want: true},
		{name: "DENY of every topic", acls: []string{"ALLOW User:alice * WRITE TOPIC LITERAL t1", "DENY User:alice * WRITE TOPIC LITERAL *"}, op: OpWrite},
		{name: "DENY of every topic beats ALLOW of every topic", acls: []string{"ALLOW User:alice * WRITE TOPIC LITERAL *", "DENY User:* * WRITE TOPIC LITERAL *"}, op: OpWrite},
		{name: "a DENY of another operation does not count", acls: []string{"ALLOW User:alice * WRITE TOPIC LITERAL t1", "DENY User:alice * READ TOPIC LITERAL t1"}, op: OpWrite, want: true},
		{name: "allow-everyone, but the wildcard names every topic", noACL: true, acls: []string{"DENY User:bob * WRITE TOPIC LITERAL *"}, op: OpWrite},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			who := c.who
			if who == (auth.Principal{}) {
				who = alice
			}
			a := New(Config{SuperUsers: []auth.Principal{admin}, AllowIfNoACL: c.noACL})
			if got := a.AuthorizeAny(set(t, c.acls...), Client{Principal: who, Addr: clientA}, c.op, ResourceTopic); got != c.want {
				t.Fatalf("AuthorizeAny = %v, want %v", got, c.want)
			}
		})
	}
}

func TestAuthorizedOperations(t *testing.T) {
	a := New(Config{SuperUsers: []auth.Principal{admin}})
	s := set(t, "ALLOW User:alice * READ TOPIC LITERAL orders", "ALLOW User:alice * ALTER_CONFIGS TOPIC PREFIXED ord")
	bits := func(ops ...Operation) int32 {
		var n int32
		for _, op := range ops {
			n |= 1 << op
		}
		return n
	}
	for _, c := range []struct {
		who  auth.Principal
		want int32
	}{
		{alice, bits(OpRead, OpDescribe, OpDescribeConfigs, OpAlterConfigs)},
		{bob, 0},
		{admin, bits(SupportedOperations(ResourceTopic)...)},
	} {
		if got := a.AuthorizedOperations(s, Client{Principal: c.who, Addr: clientA}, ResourceTopic, "orders"); got != c.want {
			t.Errorf("%v: %b, want %b", c.who, got, c.want)
		}
	}
}

func TestParsePrincipals(t *testing.T) {
	got, err := ParsePrincipals(" User:a;User:b;;User:CN=x,O=y ")
	if err != nil || len(got) != 3 || got[0] != auth.User("a") || got[2] != auth.User("CN=x,O=y") {
		t.Fatalf("ParsePrincipals = %v, %v", got, err)
	}
	if _, err := ParsePrincipals("User:a;bob"); err == nil {
		t.Fatal("bob parsed as a principal")
	}
}
