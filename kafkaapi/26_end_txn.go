package kafkaapi

// EndTxn, key 26, versions 0..4 advertised; 5 served with Config.TxnV2.
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
// v5 (transaction version 2, KIP-890 part 2; docs/design/txn-v2.md): every
// EndTxn bumps the producer's epoch, and the answer carries producer_id and
// producer_epoch, the id and epoch the producer goes on with (its id at the
// bumped epoch, or a new id at 0 once the epochs are exhausted). An abort with
// nothing in the transaction is accepted with a bump; a retry at the epoch
// before the bump answers the current id and epoch (txn.Coordinator.EndTxn).
// The version decides, not the cluster's feature: v0-v4 keep transaction
// version 1 (librdkafka). v5 is served only with Config.TxnV2 until the feature
// is finalized (WP4).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.EndTxnRequest]{
		min: 0, max: 4, txnV2Max: 5,
		handle: (*Server).handleEndTxn,
	})
}

func (s *Server) handleEndTxn(c *conn, _ *RequestHeader, req *kmsg.EndTxnRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse) // producer id and epoch -1
	resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	if s.cfg.Txn != nil && c.allowed(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID) {
		tv2 := req.Version >= 5
		pid, epoch, code := s.cfg.Txn.EndTxn(c.ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, tv2)
		resp.ErrorCode = code
		if tv2 && code == 0 {
			resp.ProducerID, resp.ProducerEpoch = pid, epoch
		}
	}
	return resp
}
