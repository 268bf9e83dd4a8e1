package kafkaapi

// KIP-890 part 1: a partition leader verifies with the transaction coordinator that
// a partition is in a producer's transaction before the producer's first batch of
// it is appended there.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/cluster"
	"skiff/internal/batch"
	"skiff/replication"
	"skiff/txn"
)

// verifyTimeout bounds a verification with another broker.
const verifyTimeout = 5 * time.Second

// appendTransactional appends a transactional batch of transactional id id,
// verifying first when it would open a transaction on p.
func (s *Server) appendTransactional(c *conn, p *replication.Partition, id string, records []byte, acks int16) (replication.AppendResult, error) {
	h, err := batch.ParseHeader(records)
	if err != nil {
		return p.Append(records, acks) // refused there, with the right code
	}
	guard, needed := p.TxnVerification(h.ProducerID)
	if !needed {
		return p.Append(records, acks)
	}
	tp := txn.TopicPartition{Topic: p.Topic, Partition: p.ID}
	if code := s.verifyTxn(c.ctx, id, h.ProducerID, h.ProducerEpoch, tp); code != 0 {
		return replication.AppendResult{}, fmt.Errorf("transaction of %q does not include %s-%d: %w", id, p.Topic, p.ID, kerr.ErrorForCode(code))
	}
	return p.AppendVerified(records, acks, guard)
}

// verifyTxn asks the coordinator of id, here or on its broker, whether tp is in
// the open transaction of pid at epoch, and returns its code.
func (s *Server) verifyTxn(ctx context.Context, id string, pid int64, epoch int16, tp txn.TopicPartition) int16 {
	t, ok := s.cache.Topic(cluster.TransactionTopic)
	if !ok {
		return kerr.InvalidTxnState.Code // no transaction was ever begun
	}
	st, ok := s.cache.Partition(cluster.TransactionTopic, txn.PartitionFor(id, t.Partitions))
	switch {
	case !ok || st.Leader == cluster.NoLeader:
		return kerr.NotEnoughReplicas.Code // retriable: the coordinator moves
	case st.Leader == s.cfg.NodeID:
		return verifyCode(s.cfg.Txn.Verify(id, pid, epoch, tp))
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(4)
	x := kmsg.NewAddPartitionsToTxnRequestTransaction()
	x.TransactionalID, x.ProducerID, x.ProducerEpoch, x.VerifyOnly = id, pid, epoch, true
	x.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: tp.Topic, Partitions: []int32{tp.Partition}}}
	req.Transactions = append(req.Transactions, x)
	ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	resp, err := s.parts.BrokerRequest(ctx, st.Leader, req)
	if err != nil {
		s.logger.Debug("verify a transaction with its coordinator", "broker", st.Leader, "err", err)
		return kerr.NotEnoughReplicas.Code
	}
	r := resp.(*kmsg.AddPartitionsToTxnResponse)
	if r.ErrorCode != 0 {
		return r.ErrorCode
	}
	for _, rx := range r.Transactions {
		for _, rt := range rx.Topics {
			for _, rp := range rt.Partitions {
				return verifyCode(rp.ErrorCode)
			}
		}
	}
	return kerr.UnknownServerError.Code
}

// verifyCode maps the coordinator's answer to the producer's: a coordinator that
// moved or loads is retriable for the producer too.
func verifyCode(code int16) int16 {
	if err := kerr.ErrorForCode(code); errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.CoordinatorNotAvailable) {
		return kerr.NotEnoughReplicas.Code
	}
	return code
}
