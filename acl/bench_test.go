package acl

import (
	"fmt"
	"net/netip"
	"testing"

	"skiff/auth"
)

// BenchmarkAuthorize decides one principal's WRITE on one topic, the check of
// every Produce, against sets of n ACLs: literal ACLs of other topics and
// principals, a few prefixes and the wildcard. With no ACL at all the answer is
// a refusal (allow-everyone-if-no-acl-found is off).
func BenchmarkAuthorize(b *testing.B) {
	for _, n := range []int{0, 100, 10000} {
		var bs []Binding
		for i := range n {
			bs = append(bs, Binding{Resource: ResourceTopic, Name: fmt.Sprintf("topic-%d", i), Pattern: PatternLiteral,
				Principal: auth.User(fmt.Sprintf("user-%d", i%100)), Host: "*", Operation: OpWrite, Permission: Allow})
		}
		if n > 0 {
			bs = append(bs[:n-3],
				Binding{Resource: ResourceTopic, Name: "top", Pattern: PatternPrefixed, Principal: auth.User("other"), Host: "*", Operation: OpRead, Permission: Allow},
				Binding{Resource: ResourceTopic, Name: "topic-1", Pattern: PatternPrefixed, Principal: auth.User("user-1"), Host: "10.0.0.9", Operation: OpAll, Permission: Deny},
				Binding{Resource: ResourceTopic, Name: "*", Pattern: PatternLiteral, Principal: auth.User("admin"), Host: "*", Operation: OpAll, Permission: Allow})
		}
		s := NewSet(bs)
		a := New(Config{})
		c := Client{Principal: auth.User("user-1"), Addr: netip.MustParseAddr("10.0.0.1")}
		want := n > 0
		b.Run(fmt.Sprintf("acls=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if a.Authorize(s, c, OpWrite, ResourceTopic, "topic-1").Allowed != want {
					b.Fatalf("allowed is not %v", want)
				}
			}
		})
	}
}
