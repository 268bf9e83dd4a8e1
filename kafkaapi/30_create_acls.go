package kafkaapi

// CreateAcls, key 30, versions 0..3 (2+ flexible).
//
// Behaviour: each creation is checked (acl.Binding.Validate: a topic, group,
// cluster named kafka-cluster or transactional id with a non-empty name, a
// LITERAL or PREFIXED pattern, a TYPE:NAME principal, a host * or an IP address,
// a concrete operation, ALLOW or DENY; v0 creations are LITERAL), and the valid
// ones are written to etcd (at most 10,000; in one transaction up to 1 MiB), each result
// answering its creation in order: INVALID_REQUEST with a message for an invalid
// one, REQUEST_TIMED_OUT when etcd did not take the write. An ACL that exists
// already is no error. The answer comes once this node applies the ACLs; other
// nodes apply them as their metadata watch delivers them. Needs ALTER on the
// cluster (CLUSTER_AUTHORIZATION_FAILED for every creation); without an
// authorizer, SECURITY_DISABLED for every creation.
//
// Not implemented: ACLs of delegation tokens and users (resource types 6, 7;
// Skiff has neither) are refused with INVALID_REQUEST.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/auth"
)

func init() {
	register(api[*kmsg.CreateACLsRequest]{
		min: 0, max: 3,
		handle:  (*Server).handleCreateACLs,
		entries: func(r *kmsg.CreateACLsRequest) int { return len(r.Creations) },
	})
}

func (s *Server) handleCreateACLs(c *conn, _ *RequestHeader, req *kmsg.CreateACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	set := func(i int, code int16, msg string) {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
		resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, &msg
	}
	if code, msg := c.aclRefusal(acl.OpAlter); code != nil {
		for i := range resp.Results {
			set(i, code.Code, msg)
		}
		return resp
	}
	var valid []acl.Binding
	var at []int // the creation of each valid binding
	for i, cr := range req.Creations {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
		p, err := auth.ParsePrincipal(cr.Principal)
		if err != nil {
			set(i, kerr.InvalidRequest.Code, err.Error())
			continue
		}
		b := acl.Binding{Resource: acl.ResourceType(cr.ResourceType), Name: cr.ResourceName, Pattern: acl.PatternType(cr.ResourcePatternType),
			Principal: p, Host: cr.Host, Operation: acl.Operation(cr.Operation), Permission: acl.Permission(cr.PermissionType)}
		if err := b.Validate(); err != nil {
			set(i, kerr.InvalidRequest.Code, err.Error())
			continue
		}
		valid, at = append(valid, b), append(at, i)
	}
	if len(valid) == 0 {
		return resp
	}
	ctx, cancel := context.WithTimeout(c.ctx, metadataWriteTimeout)
	defer cancel()
	code, msg := s.writeACLs(ctx, "create ACLs", func(ctx context.Context) (int64, error) { return s.meta.CreateACLs(ctx, valid) })
	if code != 0 {
		for _, i := range at {
			set(i, code, msg)
		}
		return resp
	}
	for _, b := range valid {
		c.logger.Info("ACL created", "acl", b.String(), "by", c.principal.String())
	}
	return resp
}
