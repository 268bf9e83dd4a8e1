package cluster

import (
	"errors"
	"slices"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"skiff/acl"
	"skiff/auth"
)

func binding(name string, pattern acl.PatternType, who string, op acl.Operation, perm acl.Permission) acl.Binding {
	return acl.Binding{Resource: acl.ResourceTopic, Name: name, Pattern: pattern, Principal: auth.User(who), Host: "*", Operation: op, Permission: perm}
}

// TestACLs: ACLs written by CreateACLs reach every cache (a second client's
// too), creating one twice keeps it once, DeleteACLs deletes what its filters
// match and reports it per filter, and a cache started later lists them.
func TestACLs(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	cache := startCache(t, m.Client())
	other := startCache(t, newClient(t, m))

	read := binding("orders", acl.PatternLiteral, "alice", acl.OpRead, acl.Allow)
	write := binding("ord", acl.PatternPrefixed, "alice", acl.OpWrite, acl.Allow)
	deny := binding("orders", acl.PatternLiteral, "bob", acl.OpAll, acl.Deny)
	group := acl.Binding{Resource: acl.ResourceGroup, Name: "g/with/slashes\x00", Pattern: acl.PatternLiteral,
		Principal: auth.Principal{Type: "User", Name: "CN=x,O=y:z"}, Host: "::1", Operation: acl.OpRead, Permission: acl.Allow}
	rev, err := s.CreateACLs(ctx, []acl.Binding{read, write, deny, group, read})
	if err != nil {
		t.Fatal(err)
	}
	all := []acl.Binding{write, read, deny, group} // sorted: topic ord, topic orders (alice, bob), group
	for _, c := range []*Cache{cache, other} {
		if err := c.WaitRevision(ctx, rev); err != nil {
			t.Fatal(err)
		}
		if got := c.Snapshot().ACLs().Bindings(); !slices.Equal(got, all) {
			t.Fatalf("cache has %v\nwant %v", got, all)
		}
	}
	// The cache's index decides: alice reads orders, bob is denied everything.
	a := acl.New(acl.Config{})
	if d := a.Authorize(cache.Snapshot().ACLs(), acl.Client{Principal: auth.User("alice")}, acl.OpRead, acl.ResourceTopic, "orders"); !d.Allowed {
		t.Fatalf("alice READ orders: %v", d)
	}
	// Created again: the same keys, nothing added, nothing rewritten.
	before, err := m.Client().Get(ctx, aclKey(read))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateACLs(ctx, []acl.Binding{read, write}); err != nil {
		t.Fatal(err)
	}
	resp, err := m.Client().Get(ctx, prefixACLs, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 4 {
		t.Fatalf("%d ACL keys, want 4", len(resp.Kvs))
	}
	after, err := m.Client().Get(ctx, aclKey(read))
	if err != nil {
		t.Fatal(err)
	}
	if after.Kvs[0].ModRevision != before.Kvs[0].ModRevision {
		t.Fatalf("an existing ACL was rewritten (mod revision %d, then %d)", before.Kvs[0].ModRevision, after.Kvs[0].ModRevision)
	}

	every := acl.Filter{Resource: acl.ResourceAny, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny}
	alice, nobody := every, every
	alice.Principal = ptr("User:alice")
	nobody.Principal = ptr("User:nobody")
	matched, rev, err := s.DeleteACLs(ctx, []acl.Filter{alice, nobody, alice})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]acl.Binding{{write, read}, nil, {write, read}}; len(matched) != 3 || !slices.Equal(sorted(matched[0]), want[0]) || matched[1] != nil || !slices.Equal(sorted(matched[2]), want[2]) {
		t.Fatalf("deleted %v, want %v", matched, want)
	}
	if err := cache.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if got := cache.Snapshot().ACLs().Bindings(); !slices.Equal(got, []acl.Binding{deny, group}) {
		t.Fatalf("after the deletion the cache has %v", got)
	}
	// A filter matching nothing deletes nothing.
	if matched, _, err := s.DeleteACLs(ctx, []acl.Filter{nobody}); err != nil || len(matched) != 1 || matched[0] != nil {
		t.Fatalf("nothing to delete: %v, %v", matched, err)
	}

	// A cache started now lists what is left.
	late := startCache(t, newClient(t, m))
	if got := late.Snapshot().ACLs().Bindings(); !slices.Equal(got, []acl.Binding{deny, group}) {
		t.Fatalf("a new cache lists %v", got)
	}

	// Invalid bindings and too many are refused, nothing written.
	if _, err := s.CreateACLs(ctx, []acl.Binding{read, {Resource: acl.ResourceTopic}}); !errors.Is(err, acl.ErrInvalid) {
		t.Fatalf("invalid binding: %v", err)
	}
	many := make([]acl.Binding, MaxACLsPerRequest+1)
	if _, err := s.CreateACLs(ctx, many); !errors.Is(err, ErrTooManyACLs) {
		t.Fatalf("%d bindings: %v", len(many), err)
	}
	if got := late.Snapshot().ACLs().Len(); got != 2 {
		t.Fatalf("refused creations left %d ACLs", got)
	}
}

// TestDeleteACLsConcurrent: deletions racing with creations of the same ACLs
// report each ACL as deleted at most once per deletion and leave the store
// consistent with the caches.
func TestDeleteACLsConcurrent(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	cache := startCache(t, m.Client())
	var bs []acl.Binding
	for _, n := range []string{"a", "b", "c", "d"} {
		bs = append(bs, binding(n, acl.PatternLiteral, "alice", acl.OpRead, acl.Allow))
	}
	every := acl.Filter{Resource: acl.ResourceAny, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny}
	done := make(chan error, 1)
	go func() {
		for range 20 {
			if _, err := s.CreateACLs(ctx, bs); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range 20 {
		matched, _, err := s.DeleteACLs(ctx, []acl.Filter{every})
		if err != nil {
			t.Fatal(err)
		}
		if len(matched[0]) > len(bs) {
			t.Fatalf("one deletion reported %d ACLs", len(matched[0]))
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_, rev, err := s.DeleteACLs(ctx, []acl.Filter{every})
	if err != nil {
		t.Fatal(err)
	}
	if err := cache.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if n := cache.Snapshot().ACLs().Len(); n != 0 {
		t.Fatalf("%d ACLs left", n)
	}
}

func TestACLKey(t *testing.T) {
	b := binding("orders", acl.PatternLiteral, "alice", acl.OpRead, acl.Allow)
	// The id of this binding must not change: every stored ACL is found by it.
	if got, want := aclKey(b), prefixACLs+"aeff2c07f384b707ee9c70436b379f21"; got != want {
		t.Fatalf("aclKey = %s, want %s", got, want)
	}
	if !parseACLKey(aclKey(b)) {
		t.Fatal("an ACL key is not one")
	}
	for _, k := range []string{prefixACLs, prefixACLs + "x", aclKey(b) + "0", prefixACLs + "AEFF2C07F384B707EE9C70436B379F21"} {
		if parseACLKey(k) {
			t.Errorf("%q read as an ACL key", k)
		}
	}
	// Fields that differ only in how they split between strings give other ids.
	x := b
	x.Principal = auth.Principal{Type: "User:a", Name: "lice"}
	if aclKey(x) == aclKey(b) {
		t.Fatal("two bindings share an id")
	}
	if _, err := decodeACL(aclKey(x), []byte(encodeACL(b))); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a binding under another's key: %v", err)
	}
	if got, err := decodeACL(aclKey(b), []byte(encodeACL(b))); err != nil || got != b {
		t.Fatalf("decode = %v, %v", got, err)
	}
}

func sorted(bs []acl.Binding) []acl.Binding {
	return acl.NewSet(bs).Bindings()
}

func ptr(s string) *string { return &s }
