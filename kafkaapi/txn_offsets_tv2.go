package kafkaapi

// TxnOffsetCommit v5 (transaction version 2, KIP-890 part 2): the group
// coordinator adds the group's __consumer_offsets partition to the producer's
// transaction itself, as a partition leader does for a Produce v12 batch; the
// client sends no AddOffsetsToTxn.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/txn"
)

// addOffsetsPartitionTV2 adds __consumer_offsets partition partition to the
// transaction of req's producer (an implicit add, addTxn) and returns the code
// to answer: addCode's, except that a coordinator that moves, loads or cannot
// be reached is COORDINATOR_NOT_AVAILABLE, which franz-go aborts on and
// retries for a TxnOffsetCommit.
func (s *Server) addOffsetsPartitionTV2(ctx context.Context, req *kmsg.TxnOffsetCommitRequest, partition int32) int16 {
	tp := txn.TopicPartition{Topic: txn.OffsetsTopic, Partition: partition}
	code := addCode(s.addTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp})[0])
	if code == kerr.NotEnoughReplicas.Code {
		return kerr.CoordinatorNotAvailable.Code
	}
	return code
}
