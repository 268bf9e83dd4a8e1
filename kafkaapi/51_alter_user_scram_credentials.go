package kafkaapi

// AlterUserScramCredentials, key 51, version 0 (flexible).
//
// Behaviour: per user, writes the upserted credentials (the client sends salt,
// iterations and salted password; the stored and server keys are derived from
// it, the salted password is not kept) and deletes the others, in one etcd
// transaction (docs/format/etcd-keys.md). One result per user; a user with any
// invalid change keeps its credentials: UNACCEPTABLE_CREDENTIAL for an empty
// name, salt or salted password, or iterations outside 4096..16384;
// UNSUPPORTED_SASL_MECHANISM for a mechanism other than 1 (SCRAM-SHA-256) and 2
// (SCRAM-SHA-512); DUPLICATE_RESOURCE for a mechanism of a user changed twice;
// RESOURCE_NOT_FOUND for the deletion of a credential that does not exist.
// Open sessions are not affected: a deleted user keeps its connections until
// they close or re-authenticate (as in Kafka).
//
// Authorization: ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED for every
// user, nothing changed), as in Kafka.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/auth"
	"skiff/cluster"
)

func init() {
	register(api[*kmsg.AlterUserSCRAMCredentialsRequest]{
		min: 0, max: 0,
		handle: (*Server).handleAlterUserScramCredentials,
		entries: func(r *kmsg.AlterUserSCRAMCredentialsRequest) int {
			return len(r.Deletions) + len(r.Upsertions)
		},
	})
}

// userChanges are the changes a request asks for one user, and the first error
// found in them.
type userChanges struct {
	upserts   []auth.ScramCredential
	deletions []string
	mechs     map[string]bool
	err       *kerr.Error
	msg       string
}

func (u *userChanges) reject(code *kerr.Error, msg string) {
	if u.err == nil {
		u.err, u.msg = code, msg
	}
}

// mechanism checks a change's user and mechanism, and that the mechanism is
// not changed twice.
func (u *userChanges) mechanism(user string, n int8) (string, bool) {
	mech, ok := scramMechanismNumbers[n]
	switch {
	case user == "":
		u.reject(kerr.UnacceptableCredential, "Username must not be empty")
	case !ok:
		u.reject(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
	case u.mechs[mech]:
		u.reject(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
	default:
		u.mechs[mech] = true
		return mech, true
	}
	return "", false
}

func (s *Server) handleAlterUserScramCredentials(c *conn, _ *RequestHeader, req *kmsg.AlterUserSCRAMCredentialsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var order []string
	users := map[string]*userChanges{}
	get := func(name string) *userChanges {
		u := users[name]
		if u == nil {
			u = &userChanges{mechs: map[string]bool{}}
			users[name] = u
			order = append(order, name)
		}
		return u
	}
	for _, d := range req.Deletions {
		u := get(d.Name)
		if mech, ok := u.mechanism(d.Name, d.Mechanism); ok {
			u.deletions = append(u.deletions, mech)
		}
	}
	for _, up := range req.Upsertions {
		u := get(up.Name)
		mech, ok := u.mechanism(up.Name, up.Mechanism)
		switch {
		case !ok:
			continue
		case up.Iterations < auth.MinIterations:
			u.reject(kerr.UnacceptableCredential, "Too few iterations")
		case up.Iterations > auth.MaxIterations:
			u.reject(kerr.UnacceptableCredential, "Too many iterations")
		case len(up.Salt) == 0 || len(up.SaltedPassword) == 0:
			u.reject(kerr.UnacceptableCredential, "Salt and salted password must not be empty")
		default:
			cred, err := auth.NewScramCredential(mech, up.Salt, up.SaltedPassword, int(up.Iterations))
			if err != nil {
				u.reject(kerr.UnsupportedSaslMechanism, err.Error())
				continue
			}
			u.upserts = append(u.upserts, cred)
		}
	}
	allowed := c.allowedCluster(acl.OpAlter)
	ctx, cancel := context.WithTimeout(c.ctx, metadataWriteTimeout)
	defer cancel()
	for _, name := range order {
		u := users[name]
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = name
		if !allowed {
			u.err, u.msg = kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed.Description
		}
		if u.err == nil {
			err := s.meta.AlterScramCredentials(ctx, name, u.upserts, u.deletions)
			switch {
			case errors.Is(err, cluster.ErrNoCredential):
				u.reject(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
			case err != nil:
				c.logger.Warn("alter SCRAM credentials", "user", name, "err", err)
				u.reject(kerr.UnknownServerError, err.Error())
			default:
				c.logger.Info("SCRAM credentials changed", "user", name, "upserted", len(u.upserts), "deleted", len(u.deletions),
					"by", c.principal.String())
			}
		}
		if u.err != nil {
			msg := u.msg
			r.ErrorCode, r.ErrorMessage = u.err.Code, &msg
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}
