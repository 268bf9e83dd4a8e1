package kafkaapi

// InitProducerId, key 22, versions 0..4.
//
// Behaviour: an idempotent producer (null transactional_id) gets a new producer id,
// unique in the cluster and never reused (allocated from blocks reserved in etcd), at
// epoch 0. Partitions then track its sequence numbers (see replication).
//
// A transactional producer is answered by the transaction coordinator of its id
// (package txn): its producer id at a new epoch, which fences older producers of the
// id; a transaction the previous one left open is aborted first
// (CONCURRENT_TRANSACTIONS meanwhile); transaction_timeout_ms above
// transaction.max.timeout.ms gets INVALID_TRANSACTION_TIMEOUT. From v3 the producer
// may give its current producer id and epoch (KIP-360): a mismatch is
// PRODUCER_FENCED.
//
// Not implemented: v5 (transaction version 2, KIP-890 part 2).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api[*kmsg.InitProducerIDRequest]{
		min: 0, max: 4,
		handle: (*Server).handleInitProducerID,
	})
}

func (s *Server) handleInitProducerID(c *conn, _ *RequestHeader, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		if s.cfg.Txn == nil {
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
