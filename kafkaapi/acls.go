package kafkaapi

// What DescribeAcls, CreateAcls and DeleteAcls share: the protocol's filters and
// bindings as the acl package's, and the answers without an authorizer.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/cluster"
)

// noAuthorizer is the message of SECURITY_DISABLED, as Kafka words it.
const noAuthorizer = "No Authorizer is configured on the broker"

// aclFilter is a protocol filter (DescribeAcls' fields, a DeleteAcls filter).
func aclFilter(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string,
	op kmsg.ACLOperation, perm kmsg.ACLPermissionType) acl.Filter {
	return acl.Filter{Resource: acl.ResourceType(rt), Name: name, Pattern: acl.PatternType(pt), Principal: principal,
		Host: host, Operation: acl.Operation(op), Permission: acl.Permission(perm)}
}

// aclRefusal is why an ACL key is refused before anything is read: no
// authorizer (SECURITY_DISABLED, as Kafka answers without one), or the client
// may not do op on the cluster; nil when it may go on.
func (c *conn) aclRefusal(op acl.Operation) (*kerr.Error, string) {
	switch {
	case c.srv.authorizer() == nil:
		return kerr.SecurityDisabled, noAuthorizer
	case !c.allowedCluster(op):
		return kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed.Description
	}
	return nil, ""
}

// writeACLs runs an ACL write (CreateACLs, DeleteACLs: its revision and error)
// and waits until this node applies it, so that the client's next request here
// sees it; it returns the code and message of a failure, or 0.
func (s *Server) writeACLs(ctx context.Context, op string, write func(context.Context) (int64, error)) (int16, string) {
	rev, err := write(ctx)
	if err == nil {
		err = s.cache.WaitRevision(ctx, rev)
	}
	if err == nil {
		return 0, ""
	}
	return aclWriteError(op, err)
}

// aclWriteError is the code and message of a failed ACL write.
func aclWriteError(op string, err error) (int16, string) {
	switch {
	case errors.Is(err, cluster.ErrTooManyACLs), errors.Is(err, acl.ErrInvalid):
		return kerr.InvalidRequest.Code, err.Error()
	}
	var ke *kafkaError
	errors.As(metadataWriteError(op, err), &ke)
	return ke.code.Code, ke.msg
}
