package kafkaapi

// InitProducerId, key 22, versions 0..1.
//
// Behaviour: an idempotent producer (null transactional_id) gets a new producer id,
// unique in the cluster and never reused (allocated from blocks reserved in etcd), at
// epoch 0. Partitions then track its sequence numbers (see replication).
//
// Not implemented: transactions. A transactional_id is refused with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which clients report as fatal rather than
// retrying forever.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
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
