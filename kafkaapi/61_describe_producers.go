package kafkaapi

// DescribeProducers, key 61, version 0 (KIP-664).
//
// Behaviour: for each partition led here, the producers with state on it: producer
// id and epoch, last sequence, the coordinator epoch of its latest marker (-1:
// none), and the first offset of its open transaction (-1: none), which finds
// hanging transactions (`skiff txn abort` then ends one, with that coordinator
// epoch). Partitions not led here get NOT_LEADER_OR_FOLLOWER, unknown ones
// UNKNOWN_TOPIC_OR_PARTITION.
//
// Authorization, as in Kafka: READ on each topic (TOPIC_AUTHORIZATION_FAILED).
//
// Not implemented: last_timestamp is always -1.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.DescribeProducersRequest]{
		min: 0, max: 0,
		handle: (*Server).handleDescribeProducers,
		entries: func(r *kmsg.DescribeProducersRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleDescribeProducers(c *conn, _ *RequestHeader, req *kmsg.DescribeProducersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	mayRead := c.allowedTopics(acl.OpRead)
	for _, t := range req.Topics {
		readable := mayRead(t.Topic)
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		for _, id := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = id
			if !readable {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			p, code := s.localPartition(t.Topic, id)
			rp.ErrorCode = code
			if code == 0 {
				for _, pi := range p.Producers() {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = pi.ProducerID, int32(pi.Epoch), pi.LastSequence
					ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = pi.CoordinatorEpoch, pi.TxnStartOffset
					rp.ActiveProducers = append(rp.ActiveProducers, ap)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
