package kafkaapi

// AddOffsetsToTxn, key 25, versions 0..4.
//
// Behaviour (package txn): the __consumer_offsets partition of the group joins the
// producer's transaction, so that the offsets TxnOffsetCommit writes there are
// committed or aborted with it. Errors as AddPartitionsToTxn.
//
// Authorization, as in Kafka: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group
// (GROUP_AUTHORIZATION_FAILED).
//
// v4 (KIP-1050) lets the client be answered TRANSACTION_ABORTABLE, which Kafka's
// coordinator never gives to AddOffsetsToTxn, nor does Skiff's: v4 is answered
// as v3.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.AddOffsetsToTxnRequest]{
		min: 0, max: 4,
		handle: (*Server).handleAddOffsetsToTxn,
	})
}

func (s *Server) handleAddOffsetsToTxn(c *conn, _ *RequestHeader, req *kmsg.AddOffsetsToTxnRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	switch {
	case s.cfg.Txn == nil, !c.allowed(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
	case !c.allowed(acl.OpRead, acl.ResourceGroup, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	default:
		resp.ErrorCode = s.cfg.Txn.AddOffsets(c.ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group)
	}
	return resp
}
