package kafkaapi

// InitProducerId, key 22, versions 0..1.
//
// Behaviour: an idempotent producer (null transactional_id) gets a new producer id,
// unique in the cluster and never reused (allocated from blocks reserved in etcd), at
// epoch 0. Partitions then track its sequence numbers (see replication).
//
// Authorization, as in Kafka (KIP-679): a transactional id needs WRITE on it; an
// idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE on some topic
// (CLUSTER_AUTHORIZATION_FAILED), so that the idempotent default of franz-go and Java
// producers works for every client allowed to write.
//
// Not implemented: transactions. A transactional_id is refused with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which clients report as fatal rather than
// retrying forever.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.InitProducerIDRequest]{
		min: 0, max: 1,
		handle: (*Server).handleInitProducerID,
	})
}

func (s *Server) handleInitProducerID(c *conn, _ *RequestHeader, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case req.TransactionalID != nil:
		// Refused after the check too: there are no transactions yet.
		c.allowed(acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionalID)
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp
	case !c.mayIdempotentWrite():
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp
	}
	ctx, cancel := context.WithTimeout(c.ctx, metadataWriteTimeout)
	defer cancel()
	id, err := s.meta.AllocateProducerID(ctx)
	if err != nil {
		c.logger.Warn("allocate producer id", "err", err)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}

// mayIdempotentWrite reports whether the client may produce idempotently:
// IDEMPOTENT_WRITE on the cluster, or WRITE on some topic (KIP-679). A refusal of
// both is logged and counted once.
func (c *conn) mayIdempotentWrite() bool {
	a := c.srv.authorizer()
	if a == nil || c.mayCluster(acl.OpIdempotentWrite) ||
		a.AuthorizeAny(c.srv.cache.Snapshot().ACLs(), c.aclClient(), acl.OpWrite, acl.ResourceTopic) {
		return true
	}
	c.refused(acl.OpIdempotentWrite, acl.ResourceCluster, acl.ClusterName, "neither IDEMPOTENT_WRITE on the cluster nor WRITE on any topic")
	return false
}
