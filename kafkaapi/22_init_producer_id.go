package kafkaapi

// InitProducerId, key 22, versions 0..5.
//
// Behaviour: an idempotent producer (null transactional_id) gets a new producer id,
// unique in the cluster and never reused (allocated from blocks reserved in etcd), at
// epoch 0. Partitions then track its sequence numbers (see replication).
//
// A transactional producer is answered by the transaction coordinator of its id
// (package txn): its producer id at a new epoch, which fences older producers of the
// id; a transaction the previous one left open is aborted first
// (CONCURRENT_TRANSACTIONS meanwhile), and one being ended, whose markers are
// being written, is waited for; transaction_timeout_ms above
// transaction.max.timeout.ms gets INVALID_TRANSACTION_TIMEOUT. From v3 the producer
// may give its current producer id and epoch (KIP-360): a mismatch is
// PRODUCER_FENCED.
//
// Authorization, as in Kafka (KIP-679): a transactional id needs WRITE on it
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer IDEMPOTENT_WRITE
// on the cluster or WRITE on some topic (CLUSTER_AUTHORIZATION_FAILED), so that the
// idempotent default of franz-go and Java producers works for every client allowed
// to write.
//
// v5 (KIP-1050) lets the client be answered TRANSACTION_ABORTABLE, which Kafka's
// coordinator never gives to InitProducerId, nor does Skiff's: v5 is answered as
// v4. Java producers from 3.8 and franz-go ask for it.
//
// Not implemented: v6 (two-phase commit, KIP-939).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.InitProducerIDRequest]{
		min: 0, max: 5,
		handle: (*Server).handleInitProducerID,
	})
}

func (s *Server) handleInitProducerID(c *conn, _ *RequestHeader, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case req.TransactionalID != nil:
		if s.cfg.Txn == nil || !c.allowed(acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionalID) {
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return resp
		}
		pid, epoch := int64(-1), int16(-1)
		if req.Version >= 3 {
			pid, epoch = req.ProducerID, req.ProducerEpoch
		}
		timeout := time.Duration(req.TransactionTimeoutMillis) * time.Millisecond
		resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = s.cfg.Txn.InitProducerID(c.ctx, *req.TransactionalID, timeout, pid, epoch)
		if resp.ErrorCode == kerr.ProducerFenced.Code && req.Version < 4 {
			resp.ErrorCode = kerr.InvalidProducerEpoch.Code // PRODUCER_FENCED is v4+ (KIP-588)
		}
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
