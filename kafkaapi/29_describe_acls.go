package kafkaapi

// DescribeAcls, key 29, versions 0..3 (2+ flexible; v3 only adds the USER
// resource type, which Skiff does not keep).
//
// Behaviour: the ACLs the filter matches (acl.Filter: resource type, name,
// pattern type ANY, MATCH, LITERAL or PREFIXED, principal, host, operation,
// permission), grouped by resource pattern, from this node's metadata cache.
// v0 has no pattern type: its filter is LITERAL. Needs DESCRIBE on the cluster
// (CLUSTER_AUTHORIZATION_FAILED); a filter with an unknown field answers
// INVALID_REQUEST; without an authorizer (--authorizer none) the answer is
// SECURITY_DISABLED, as in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.DescribeACLsRequest]{
		min: 0, max: 3,
		handle: (*Server).handleDescribeACLs,
	})
}

func (s *Server) handleDescribeACLs(c *conn, _ *RequestHeader, req *kmsg.DescribeACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	fail := func(code *kerr.Error, msg string) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = code.Code, &msg
		return resp
	}
	if code, msg := c.aclRefusal(acl.OpDescribe); code != nil {
		return fail(code, msg)
	}
	f := aclFilter(req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	if err := f.Validate(); err != nil {
		return fail(kerr.InvalidRequest, err.Error())
	}
	resp.Resources = describeACLResources(s.cache.Snapshot().ACLs().Select(f))
	return resp
}

// describeACLResources groups bindings, sorted by resource pattern, as
// DescribeAcls answers them.
func describeACLResources(bs []acl.Binding) []kmsg.DescribeACLsResponseResource {
	var out []kmsg.DescribeACLsResponseResource
	for i, b := range bs {
		if i == 0 || b.Resource != bs[i-1].Resource || b.Name != bs[i-1].Name || b.Pattern != bs[i-1].Pattern {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = kmsg.ACLResourceType(b.Resource), b.Name, kmsg.ACLResourcePatternType(b.Pattern)
			out = append(out, r)
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host = b.Principal.String(), b.Host
		a.Operation, a.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
		r := &out[len(out)-1]
		r.ACLs = append(r.ACLs, a)
	}
	return out
}
