package kafkaapi

// EndTxn, key 26, versions 0..4.
//
// Behaviour (package txn): the producer's transaction is committed (commit true) or
// aborted: the decision is recorded in __transaction_state, and the answer comes
// once that record is committed, as in Kafka; commit or abort markers are then
// written to every partition of the transaction in the background, and the
// producer's next AddPartitionsToTxn or AddOffsetsToTxn waits for them (up to the
// coordinator's commit timeout, then CONCURRENT_TRANSACTIONS). Repeating the same
// decision succeeds once the markers are written; the
// other decision gets INVALID_TXN_STATE, as does ending a transaction that has no
// partitions.
//
// Authorization, as in Kafka: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
//
// v4 (KIP-1050) lets the client be answered TRANSACTION_ABORTABLE; Kafka's
// coordinator gives it to no EndTxn (only to a partition leader's verification,
// see Produce v11), and neither does Skiff's: v4 is answered as v3.
//
// Not implemented: v5 (transaction version 2: an epoch bump per transaction).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.EndTxnRequest]{
		min: 0, max: 4,
		handle: (*Server).handleEndTxn,
	})
}

func (s *Server) handleEndTxn(c *conn, _ *RequestHeader, req *kmsg.EndTxnRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	if s.cfg.Txn != nil && c.allowed(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID) {
		_, _, resp.ErrorCode = s.cfg.Txn.EndTxn(c.ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, false)
	}
	return resp
}
