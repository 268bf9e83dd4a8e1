package kafkaapi_test

// Conformance of the ACL keys (29, 30, 31) at each version: on the shared node,
// which has no authorizer, SECURITY_DISABLED; on the ACL node, as its super user,
// ACLs created, described and deleted.

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	conformanceTests[29] = conformDescribeACLs
	conformanceTests[30] = conformCreateACLs
	conformanceTests[31] = conformDeleteACLs
}

// conformACL is one ACL of a conformance run, for principal User:<who>.
func conformACL(who string, pattern kmsg.ACLResourcePatternType, name string) kmsg.CreateACLsRequestCreation {
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, name, pattern
	cr.Principal, cr.Host = "User:"+who, "*"
	cr.Operation, cr.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
	return cr
}

// conformCreate creates a literal ACL (and at v1+ a prefixed one) for User:who
// at version v, with an invalid creation between them, and checks the answers.
func conformCreate(t *testing.T, c *kconn, v int16, who string) {
	req := kmsg.NewPtrCreateACLsRequest()
	req.SetVersion(v)
	bad := conformACL(who, kmsg.ACLResourcePatternTypeLiteral, "")
	req.Creations = append(req.Creations, conformACL(who, kmsg.ACLResourcePatternTypeLiteral, "orders"), bad)
	if v >= 1 {
		req.Creations = append(req.Creations, conformACL(who, kmsg.ACLResourcePatternTypePrefixed, "ord"))
	}
	resp := c.do(req).(*kmsg.CreateACLsResponse)
	if len(resp.Results) != len(req.Creations) {
		t.Fatalf("%d results for %d creations", len(resp.Results), len(req.Creations))
	}
	for i, r := range resp.Results {
		want := int16(0)
		if i == 1 {
			want = kerr.InvalidRequest.Code
			if r.ErrorMessage == nil || *r.ErrorMessage == "" {
				t.Error("an invalid creation without a message")
			}
		}
		wantCode(t, fmt.Sprintf("creation %d", i), r.ErrorCode, want)
	}
}

// conformDescribe describes the ACLs of User:who at version v.
func conformDescribe(t *testing.T, c *kconn, v int16, who string) *kmsg.DescribeACLsResponse {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.SetVersion(v)
	p := "User:" + who
	req.ResourceType, req.Principal, req.Operation, req.PermissionType = kmsg.ACLResourceTypeAny, &p, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if v >= 1 {
		req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	}
	return c.do(req).(*kmsg.DescribeACLsResponse)
}

// wantACLs checks that resp lists exactly the ACLs of conformCreate at v.
func wantACLs(t *testing.T, resp *kmsg.DescribeACLsResponse, v int16, who string) {
	t.Helper()
	wantCode(t, "DescribeAcls", resp.ErrorCode, 0)
	want := []string{"TOPIC/orders/LITERAL"}
	if v >= 1 {
		want = []string{"TOPIC/ord/PREFIXED", "TOPIC/orders/LITERAL"}
	}
	var got []string
	for _, r := range resp.Resources {
		pattern := r.ResourcePatternType
		if v == 0 {
			pattern = kmsg.ACLResourcePatternTypeLiteral // v0 has no pattern type: literal
		}
		got = append(got, fmt.Sprintf("%v/%s/%v", r.ResourceType, r.ResourceName, pattern))
		if len(r.ACLs) != 1 || r.ACLs[0].Principal != "User:"+who || r.ACLs[0].Host != "*" ||
			r.ACLs[0].Operation != kmsg.ACLOperationRead || r.ACLs[0].PermissionType != kmsg.ACLPermissionTypeAllow {
			t.Errorf("resource %s: ACLs %+v", r.ResourceName, r.ACLs)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("described %v, want %v", got, want)
	}
}

func conformDescribeACLs(t *testing.T, c *kconn, versions []int16) {
	startACLNode(t)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			r := conformDescribe(t, c, v, "anyone")
			wantCode(t, "DescribeAcls without an authorizer", r.ErrorCode, kerr.SecurityDisabled.Code)
			if r.ErrorMessage == nil {
				t.Error("SECURITY_DISABLED without a message")
			}

			ac := dial(t, aclNode.addrs["PLAINTEXT"])
			who := fmt.Sprintf("conform-29-v%d", v)
			conformCreate(t, ac, v, who)
			wantACLs(t, conformDescribe(t, ac, v, who), v, who)

			// A filter with an unknown field.
			bad := kmsg.NewPtrDescribeACLsRequest()
			bad.SetVersion(v)
			bad.ResourceType, bad.Operation, bad.PermissionType = kmsg.ACLResourceTypeTopic, kmsg.ACLOperationUnknown, kmsg.ACLPermissionTypeAny
			wantCode(t, "unknown operation", ac.do(bad).(*kmsg.DescribeACLsResponse).ErrorCode, kerr.InvalidRequest.Code)
		})
	}
}

func conformCreateACLs(t *testing.T, c *kconn, versions []int16) {
	startACLNode(t)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrCreateACLsRequest()
			req.SetVersion(v)
			req.Creations = append(req.Creations, conformACL("anyone", kmsg.ACLResourcePatternTypeLiteral, "orders"))
			r := c.do(req).(*kmsg.CreateACLsResponse)
			if len(r.Results) != 1 {
				t.Fatalf("%d results", len(r.Results))
			}
			wantCode(t, "CreateAcls without an authorizer", r.Results[0].ErrorCode, kerr.SecurityDisabled.Code)

			ac := dial(t, aclNode.addrs["PLAINTEXT"])
			who := fmt.Sprintf("conform-30-v%d", v)
			conformCreate(t, ac, v, who)
			conformCreate(t, ac, v, who) // again: no error, nothing added
			wantACLs(t, conformDescribe(t, ac, v, who), v, who)
		})
	}
}

func conformDeleteACLs(t *testing.T, c *kconn, versions []int16) {
	startACLNode(t)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			who := fmt.Sprintf("conform-31-v%d", v)
			req := kmsg.NewPtrDeleteACLsRequest()
			req.SetVersion(v)
			p := "User:" + who
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.Principal, f.Operation, f.PermissionType = kmsg.ACLResourceTypeAny, &p, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			if v >= 1 {
				f.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
			}
			bad := f
			bad.PermissionType = kmsg.ACLPermissionTypeUnknown
			req.Filters = append(req.Filters, f, bad)
			r := c.do(req).(*kmsg.DeleteACLsResponse)
			if len(r.Results) != 2 {
				t.Fatalf("%d results", len(r.Results))
			}
			wantCode(t, "DeleteAcls without an authorizer", r.Results[0].ErrorCode, kerr.SecurityDisabled.Code)

			ac := dial(t, aclNode.addrs["PLAINTEXT"])
			conformCreate(t, ac, v, who)
			r = ac.do(req).(*kmsg.DeleteACLsResponse)
			if len(r.Results) != 2 {
				t.Fatalf("%d results", len(r.Results))
			}
			wantCode(t, "DeleteAcls", r.Results[0].ErrorCode, 0)
			wantCode(t, "DeleteAcls of an unknown permission", r.Results[1].ErrorCode, kerr.InvalidRequest.Code)
			want := 1
			if v >= 1 {
				want = 2
			}
			if got := len(r.Results[0].MatchingACLs); got != want {
				t.Fatalf("deleted %d ACLs, want %d: %+v", got, want, r.Results[0].MatchingACLs)
			}
			for _, m := range r.Results[0].MatchingACLs {
				if m.ErrorCode != 0 || m.Principal != p || m.ResourceType != kmsg.ACLResourceTypeTopic || m.Operation != kmsg.ACLOperationRead {
					t.Errorf("matching ACL %+v", m)
				}
			}
			if left := conformDescribe(t, ac, v, who); len(left.Resources) != 0 {
				t.Fatalf("after the deletion: %+v", left.Resources)
			}
		})
	}
}
