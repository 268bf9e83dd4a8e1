package cluster

import (
	"fmt"
	"testing"
	"time"

	"skiff/acl"
)

// TestCreateMaxACLs: MaxACLsPerRequest ACLs fit one transaction (the embedded
// etcd's MaxTxnOps and MaxRequestBytes), and deleting them all does too.
func TestCreateMaxACLs(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	bs := make([]acl.Binding, MaxACLsPerRequest)
	for i := range bs {
		bs[i] = binding(fmt.Sprintf("topic-%05d-%s", i, "with-a-longer-name-as-teams-write-them"), acl.PatternPrefixed, "some-principal", acl.OpWrite, acl.Allow)
	}
	start := time.Now()
	if _, err := s.CreateACLs(ctx, bs); err != nil {
		t.Fatal(err)
	}
	t.Logf("created %d ACLs in %v", len(bs), time.Since(start))
	start = time.Now()
	every := acl.Filter{Resource: acl.ResourceAny, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny}
	matched, _, err := s.DeleteACLs(ctx, []acl.Filter{every})
	if err != nil {
		t.Fatal(err)
	}
	if len(matched[0]) != MaxACLsPerRequest {
		t.Fatalf("deleted %d", len(matched[0]))
	}
	t.Logf("deleted them in %v", time.Since(start))
}
