package kafkaapi

// DeleteAcls, key 31, versions 0..3 (2+ flexible).
//
// Behaviour: every ACL one of the filters matches (as DescribeAcls' filter; v0
// filters are LITERAL) is deleted, all in one etcd transaction (at most 10,000),
// and each filter's result lists the ACLs it matched. A filter with an unknown
// field answers INVALID_REQUEST and deletes nothing; REQUEST_TIMED_OUT when etcd
// did not take the deletion. The answer comes once this node applies it. Needs
// ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED for every filter); without
// an authorizer, SECURITY_DISABLED for every filter.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.DeleteACLsRequest]{
		min: 0, max: 3,
		handle:  (*Server).handleDeleteACLs,
		entries: func(r *kmsg.DeleteACLsRequest) int { return len(r.Filters) },
	})
}

func (s *Server) handleDeleteACLs(c *conn, _ *RequestHeader, req *kmsg.DeleteACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	set := func(i int, code int16, msg string) {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
		resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, &msg
	}
	if code, msg := c.aclRefusal(acl.OpAlter); code != nil {
		for i := range resp.Results {
			set(i, code.Code, msg)
		}
		return resp
	}
	var filters []acl.Filter
	var at []int // the request's filter of each valid one
	for i, rf := range req.Filters {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
		f := aclFilter(rf.ResourceType, rf.ResourceName, rf.ResourcePatternType, rf.Principal, rf.Host, rf.Operation, rf.PermissionType)
		if err := f.Validate(); err != nil {
			set(i, kerr.InvalidRequest.Code, err.Error())
			continue
		}
		filters, at = append(filters, f), append(at, i)
	}
	if len(filters) == 0 {
		return resp
	}
	ctx, cancel := context.WithTimeout(c.ctx, metadataWriteTimeout)
	defer cancel()
	var matched [][]acl.Binding
	code, msg := s.writeACLs(ctx, "delete ACLs", func(ctx context.Context) (rev int64, err error) {
		matched, rev, err = s.meta.DeleteACLs(ctx, filters)
		return rev, err
	})
	if code != 0 {
		for _, i := range at {
			set(i, code, msg)
		}
		return resp
	}
	for j, i := range at {
		r := &resp.Results[i]
		for _, b := range matched[j] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(b.Resource), b.Name, kmsg.ACLResourcePatternType(b.Pattern)
			m.Principal, m.Host = b.Principal.String(), b.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
			r.MatchingACLs = append(r.MatchingACLs, m)
			c.logger.Info("ACL deleted", "acl", b.String(), "by", c.principal.String())
		}
	}
	return resp
}
