package kafkaapi

// TxnOffsetCommit, key 28, versions 0..4.
//
// Behaviour (package groups): the offsets are appended to the group's
// __consumer_offsets partition inside the producer's transaction and become
// visible to OffsetFetch only when the transaction commits (its marker reaches the
// partition); an abort drops them. From v3 a member of the group gives its member
// id and generation, checked as OffsetCommit checks them (KIP-447: ILLEGAL_GENERATION,
// UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID). A producer fenced on the partition gets
// INVALID_PRODUCER_EPOCH. A share group's id is GROUP_ID_NOT_FOUND for every
// partition, as in Kafka (one group per id).
//
// Authorization, as in Kafka: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group
// (GROUP_AUTHORIZATION_FAILED), each for every partition; READ on each topic
// (TOPIC_AUTHORIZATION_FAILED for its partitions, the others committed).
//
// v4 (KIP-1050) lets the client be answered TRANSACTION_ABORTABLE, which Kafka
// gives when its verification finds the group's offsets partition not in the
// transaction (KIP-890 part 1 for offsets). Skiff does not verify offset commits
// with the transaction coordinator, so v4 is answered as v3.
//
// Not implemented: v5 (transaction version 2).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.TxnOffsetCommitRequest]{
		min: 0, max: 4,
		handle: (*Server).handleTxnOffsetCommit,
		entries: func(r *kmsg.TxnOffsetCommitRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleTxnOffsetCommit(c *conn, _ *RequestHeader, req *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	switch {
	case !c.allowed(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		return txnOffsetCommitRefused(req, req.Topics, kerr.TransactionalIDAuthorizationFailed.Code)
	case !c.allowed(acl.OpRead, acl.ResourceGroup, req.Group):
		return txnOffsetCommitRefused(req, req.Topics, kerr.GroupAuthorizationFailed.Code)
	}
	mayRead := c.allowedTopics(acl.OpRead)
	var allowed, denied []kmsg.TxnOffsetCommitRequestTopic
	for _, t := range req.Topics {
		if mayRead(t.Topic) {
			allowed = append(allowed, t)
		} else {
			denied = append(denied, t)
		}
	}
	if len(denied) == 0 {
		return s.cfg.Groups.TxnOffsetCommit(c.ctx, req)
	}
	sub := *req
	sub.Topics = allowed
	resp := s.cfg.Groups.TxnOffsetCommit(c.ctx, &sub)
	resp.Topics = append(resp.Topics, txnOffsetCommitRefused(req, denied, kerr.TopicAuthorizationFailed.Code).Topics...)
	return resp
}

// txnOffsetCommitRefused answers every partition of topics with code.
func txnOffsetCommitRefused(req *kmsg.TxnOffsetCommitRequest, topics []kmsg.TxnOffsetCommitRequestTopic, code int16) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, t := range topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
