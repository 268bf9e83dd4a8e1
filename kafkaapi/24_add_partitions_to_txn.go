package kafkaapi

// AddPartitionsToTxn, key 24, versions 0..3.
//
// Behaviour (package txn): the partitions join the producer's transaction, which
// starts if none is open; the answer comes once the transaction's state is
// committed to __transaction_state. A partition of an unknown topic gets
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED; a stale epoch
// INVALID_PRODUCER_EPOCH; a transaction being ended CONCURRENT_TRANSACTIONS.
//
// Not implemented: v4+ (the batched broker-to-broker form of KIP-890).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/txn"
)

func init() {
	register(api[*kmsg.AddPartitionsToTxnRequest]{
		min: 0, max: 3,
		handle: (*Server).handleAddPartitionsToTxn,
		entries: func(r *kmsg.AddPartitionsToTxnRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleAddPartitionsToTxn(c *conn, _ *RequestHeader, req *kmsg.AddPartitionsToTxnRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	var parts []txn.TopicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, txn.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	code, codes := kerr.TransactionalIDAuthorizationFailed.Code, map[txn.TopicPartition]int16(nil)
	if s.cfg.Txn != nil {
		code, codes = s.cfg.Txn.AddPartitions(c.ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts)
	}
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			if c, ok := codes[txn.TopicPartition{Topic: t.Topic, Partition: p}]; ok {
				rp.ErrorCode = c
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
