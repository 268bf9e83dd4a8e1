package kafkaapi

// Produce, key 0, versions 3..7 (magic 2 record batches only).
//
// Behaviour: each partition's records must be exactly one RecordBatch v2; it is
// checked (length, magic, lastOffsetDelta, CRC32C: CORRUPT_MESSAGE), limited by
// max.message.bytes (MESSAGE_TOO_LARGE), deduplicated for idempotent producers
// (a retry of one of the last 5 batches gets its original offset; gaps get
// OUT_OF_ORDER_SEQUENCE_NUMBER, older epochs INVALID_PRODUCER_EPOCH) and appended
// whole. The internal topic __consumer_offsets is written by the group coordinator
// only: producing to it gets INVALID_TOPIC_EXCEPTION, as in Kafka. acks=0 gets no
// response at all. On one node acks=1 and acks=-1 are the same:
// the node is the whole ISR. acks must be -1, 0 or 1 (INVALID_REQUIRED_ACKS otherwise).
//
// Not implemented: transactions (a transactional batch gets INVALID_TXN_STATE and a
// transactional_id TRANSACTIONAL_ID_AUTHORIZATION_FAILED), per-record errors (v8+).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/cluster"
)

func (s *Server) handleProduce(c *conn, req *kmsg.ProduceRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for i, t := range req.Topics {
		rt := &resp.Topics[i]
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		for j, rp := range t.Partitions {
			pr := &rt.Partitions[j]
			*pr = kmsg.NewProduceResponseTopicPartition()
			pr.Partition = rp.Partition
			pr.BaseOffset, pr.LogAppendTime, pr.LogStartOffset = -1, -1, -1
			switch {
			case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
				pr.ErrorCode = kerr.InvalidRequiredAcks.Code
				continue
			case req.TransactionID != nil:
				pr.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				continue
			case cluster.IsInternalTopic(t.Topic):
				pr.ErrorCode = kerr.InvalidTopicException.Code
				continue
			}
			p, code := s.localPartition(t.Topic, rp.Partition)
			if code != 0 {
				pr.ErrorCode = code
				continue
			}
			res, err := p.Append(rp.Records)
			if err != nil {
				pr.ErrorCode = errorCode(err)
				c.logger.Debug("produce refused", "topic", t.Topic, "partition", rp.Partition, "err", err)
				continue
			}
			pr.BaseOffset = res.BaseOffset
			pr.LogAppendTime = res.LogAppendTime
			pr.LogStartOffset = p.LogStartOffset()
		}
	}
	if req.Acks == 0 {
		return nil
	}
	return resp
}
