package kafkaapi

// TxnOffsetCommit v5 (transaction version 2, KIP-890 part 2): the group
// coordinator adds the group's __consumer_offsets partition to the producer's
// transaction itself, as a partition leader does for a Produce v12 batch; the
// client sends no AddOffsetsToTxn.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/cluster"
	"skiff/txn"
)

// addOffsetsPartitionTV2 adds __consumer_offsets partition partition to the
// transaction of req's producer (an implicit add) at its coordinator, here or
// on its broker (AddPartitionsToTxn v5, verify_only false, as a broker), and
// returns the code to answer. A coordinator that moves, loads or cannot be
// reached is COORDINATOR_NOT_AVAILABLE, which franz-go aborts on and retries;
// the coordinator's other answers pass (INVALID_TXN_STATE becomes
// TRANSACTION_ABORTABLE in groups).
func (s *Server) addOffsetsPartitionTV2(ctx context.Context, req *kmsg.TxnOffsetCommitRequest, partition int32) int16 {
	tp := txn.TopicPartition{Topic: txn.OffsetsTopic, Partition: partition}
	code := s.addImplicitly(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, tp)
	if code == kerr.NotEnoughReplicas.Code {
		return kerr.CoordinatorNotAvailable.Code
	}
	return code
}

// addImplicitly is one implicit add of tp to the transaction of id at pid and
// epoch; codes as verifyTxn's (verifyCode).
func (s *Server) addImplicitly(ctx context.Context, id string, pid int64, epoch int16, tp txn.TopicPartition) int16 {
	t, ok := s.cache.Topic(cluster.TransactionTopic)
	if !ok {
		return kerr.InvalidTxnState.Code // no transaction was ever begun
	}
	st, ok := s.cache.Partition(cluster.TransactionTopic, txn.PartitionFor(id, t.Partitions))
	switch {
	case !ok || st.Leader == cluster.NoLeader:
		return kerr.NotEnoughReplicas.Code
	case st.Leader == s.cfg.NodeID:
		code, codes := s.cfg.Txn.AddPartitions(ctx, id, pid, epoch, []txn.TopicPartition{tp}, true)
		if c, ok := codes[tp]; ok {
			code = c
		}
		return verifyCode(code)
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(5)
	x := kmsg.NewAddPartitionsToTxnRequestTransaction()
	x.TransactionalID, x.ProducerID, x.ProducerEpoch, x.VerifyOnly = id, pid, epoch, false
	x.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: tp.Topic, Partitions: []int32{tp.Partition}}}
	req.Transactions = append(req.Transactions, x)
	ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	resp, err := s.parts.BrokerRequest(ctx, st.Leader, req)
	if err != nil {
		s.logger.Debug("add a partition to a transaction at its coordinator", "broker", st.Leader, "err", err)
		return kerr.NotEnoughReplicas.Code
	}
	r := resp.(*kmsg.AddPartitionsToTxnResponse)
	if r.ErrorCode != 0 {
		return verifyCode(r.ErrorCode)
	}
	for _, rx := range r.Transactions {
		for _, rt := range rx.Topics {
			for _, rp := range rt.Partitions {
				if rt.Topic == tp.Topic && rp.Partition == tp.Partition {
					return verifyCode(rp.ErrorCode)
				}
			}
		}
	}
	return kerr.UnknownServerError.Code
}
