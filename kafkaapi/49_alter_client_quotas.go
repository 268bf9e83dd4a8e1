package kafkaapi

// AlterClientQuotas, key 49, versions 0-1 (v1 flexible).
//
// Behaviour: per entity (user, client-id or both, a null name for the
// default), sets the quotas of its ops and removes those marked remove, in
// one etcd transaction per entity (/skiff/quotas/..., docs/format/etcd-keys.md);
// with validate_only, checks and writes nothing. One result per entry, as
// Kafka's controller words them, all INVALID_REQUEST: an empty entity, a type
// given twice, an unknown type, an empty name, an unknown quota key, a value
// not above 0, a fraction for producer_byte_rate or consumer_byte_rate, a key
// given twice, an entity given twice (the first is applied). ip entities
// (connection_creation_rate) are refused: Skiff does not enforce them. The
// answer waits until this node's cache has the change, so the client's next
// DescribeClientQuotas here sees it; each node throttles by it as soon as its
// cache has it.
//
// Authorization: ALTER_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED for
// every entry, nothing changed), as in Kafka.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/quota"
)

func init() {
	register(api[*kmsg.AlterClientQuotasRequest]{
		min: 0, max: 1,
		handle:  (*Server).handleAlterClientQuotas,
		entries: func(r *kmsg.AlterClientQuotasRequest) int { return len(r.Entries) },
	})
}

// quotaChange is one entry's change: the quotas set and the keys removed.
type quotaChange struct {
	set    quota.Values
	remove []string
}

func readQuotaChange(e quota.Entity, ops []kmsg.AlterClientQuotasRequestEntryOp) (quotaChange, error) {
	ch := quotaChange{set: quota.Values{}}
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.Key] {
			return ch, fmt.Errorf("Duplicate quota key %s", op.Key)
		}
		seen[op.Key] = true
		if op.Remove {
			if err := quota.Validate(e, op.Key, 1); err != nil { // the key must be known
				return ch, err
			}
			ch.remove = append(ch.remove, op.Key)
			continue
		}
		if err := quota.Validate(e, op.Key, op.Value); err != nil {
			return ch, err
		}
		ch.set[op.Key] = op.Value
	}
	return ch, nil
}

func (s *Server) handleAlterClientQuotas(c *conn, _ *RequestHeader, req *kmsg.AlterClientQuotasRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	allowed := c.allowedCluster(acl.OpAlterConfigs)
	ctx, cancel := context.WithTimeout(c.ctx, metadataWriteTimeout)
	defer cancel()
	seen := map[quota.Entity]bool{}
	var lastRev int64
	for _, entry := range req.Entries {
		r := kmsg.NewAlterClientQuotasResponseEntry()
		for _, p := range entry.Entity {
			re := kmsg.NewAlterClientQuotasResponseEntryEntity()
			re.Type, re.Name = p.Type, p.Name
			r.Entity = append(r.Entity, re)
		}
		fail := func(code *kerr.Error, msg string) {
			r.ErrorCode, r.ErrorMessage = code.Code, &msg
		}
		e, err := quotaEntity(entry.Entity, func(p kmsg.AlterClientQuotasRequestEntryEntity) (string, *string) { return p.Type, p.Name })
		var ch quotaChange
		if err == nil {
			ch, err = readQuotaChange(e, entry.Ops)
		}
		switch {
		case !allowed:
			fail(kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed.Description)
		case err != nil:
			fail(kerr.InvalidRequest, err.Error())
		case seen[e]:
			fail(kerr.InvalidRequest, "Ignoring duplicate entity "+e.String())
		case req.ValidateOnly:
		default:
			rev, err := s.meta.AlterClientQuotas(ctx, e, ch.set, ch.remove)
			if err != nil {
				var ke *kafkaError
				errors.As(metadataWriteError("alter client quotas", err), &ke)
				fail(ke.code, ke.msg)
				break
			}
			lastRev = max(lastRev, rev)
			c.logger.Info("client quotas changed", "entity", e.String(), "set", ch.set, "removed", ch.remove,
				"by", c.principal.String())
		}
		if err == nil {
			seen[e] = true
		}
		resp.Entries = append(resp.Entries, r)
	}
	if lastRev > 0 {
		if err := s.cache.WaitRevision(ctx, lastRev); err != nil {
			c.logger.Warn("alter client quotas: waiting for the cache", "err", err)
		}
	}
	return resp
}
