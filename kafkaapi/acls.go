package kafkaapi

// What DescribeAcls, CreateAcls and DeleteAcls share: the protocol's filters and
// bindings as the acl package's, and the answers without an authorizer.

import (
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
