package kafkaapi

// DescribeUserScramCredentials, key 50, version 0 (flexible).
//
// Behaviour: the SCRAM mechanisms and iteration counts of the named users, or
// of every user with a credential when the list is null; never salts or keys.
// A named user without a credential answers RESOURCE_NOT_FOUND, a user named
// twice DUPLICATE_RESOURCE. Credentials live in etcd
// (/skiff/users/<user>/<mechanism>, docs/format/etcd-keys.md).
//
// Authorization: DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED), as in
// Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/cluster"
)

func init() {
	register(api[*kmsg.DescribeUserSCRAMCredentialsRequest]{
		min: 0, max: 0,
		handle:  (*Server).handleDescribeUserScramCredentials,
		entries: func(r *kmsg.DescribeUserSCRAMCredentialsRequest) int { return len(r.Users) },
	})
}

func (s *Server) handleDescribeUserScramCredentials(c *conn, _ *RequestHeader, req *kmsg.DescribeUserSCRAMCredentialsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !c.allowedCluster(acl.OpDescribe) {
		msg := kerr.ClusterAuthorizationFailed.Description
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		return resp
	}
	ctx, cancel := context.WithTimeout(c.ctx, metadataWriteTimeout)
	defer cancel()
	users, err := s.meta.ScramUsers(ctx)
	if err != nil {
		c.logger.Warn("describe SCRAM credentials", "err", err)
		msg := err.Error()
		resp.ErrorCode, resp.ErrorMessage = kerr.UnknownServerError.Code, &msg
		return resp
	}
	byName := make(map[string]cluster.UserCredentials, len(users))
	for _, u := range users {
		byName[u.User] = u
	}
	result := func(u cluster.UserCredentials) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u.User
		for _, cred := range u.Scram {
			info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			info.Mechanism, info.Iterations = scramMechanismNumber(cred.Mechanism), int32(cred.Iterations)
			r.CredentialInfos = append(r.CredentialInfos, info)
		}
		return r
	}
	if req.Users == nil {
		for _, u := range users {
			resp.Results = append(resp.Results, result(u))
		}
		return resp
	}
	named := countNames(req.Users, func(u *kmsg.DescribeUserSCRAMCredentialsRequestUser) string { return u.Name })
	seen := map[string]bool{}
	for _, ru := range req.Users {
		if seen[ru.Name] {
			continue
		}
		seen[ru.Name] = true
		u, ok := byName[ru.Name]
		r := result(u)
		r.User = ru.Name
		fail := func(code *kerr.Error, msg string) { r.ErrorCode, r.ErrorMessage = code.Code, &msg }
		switch {
		case named[ru.Name] > 1:
			fail(kerr.DuplicateResource, "Cannot describe SCRAM credentials for the same user twice in a single request")
			r.CredentialInfos = nil
		case !ok:
			fail(kerr.ResourceNotFound, "Attempt to describe a user credential that does not exist")
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}
