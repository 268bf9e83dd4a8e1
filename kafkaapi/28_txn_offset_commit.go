package kafkaapi

// TxnOffsetCommit, key 28, versions 0..4 advertised; 5 served with Config.TxnV2.
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
// KIP-890 part 1 for offsets, as Kafka: before the producer's first offsets of a
// transaction on the group's __consumer_offsets partition, the group coordinator
// asks the transaction coordinator (verifyTxn: here, or AddPartitionsToTxn v4
// verify_only to its broker) whether that partition is in the producer's ongoing
// transaction. If not (no AddOffsetsToTxn, or the transaction already ended: a
// late or retried request), nothing is appended: INVALID_TXN_STATE, or
// TRANSACTION_ABORTABLE from v4 (KIP-1050). A coordinator that cannot be reached
// is COORDINATOR_NOT_AVAILABLE (retriable; Kafka's group coordinator maps
// NOT_ENOUGH_REPLICAS so).
//
// v5 (transaction version 2, KIP-890 part 2; docs/design/txn-v2.md): the
// client sends no AddOffsetsToTxn. The group coordinator adds the group's
// partition to the producer's transaction itself (addOffsetsPartitionTV2,
// every time: an open transaction there may be the previous one), waits until
// the marker of the producer's previous transaction there is appended (the
// hold, at most replication.MarkerHoldTimeout, then CONCURRENT_TRANSACTIONS),
// then appends (groups.Coordinator.addTxnOffsets). Nothing transient gets a
// code that is fatal to a TV2 producer: a coordinator that moves is
// COORDINATOR_NOT_AVAILABLE, a partition that moves NOT_COORDINATOR, an add
// the coordinator refuses as not in the transaction TRANSACTION_ABORTABLE.
// Served only with Config.TxnV2 until the feature is finalized (WP4).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/groups"
	"skiff/txn"
)

func init() {
	register(api[*kmsg.TxnOffsetCommitRequest]{
		min: 0, max: 4, txnV2Max: 5,
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
	verify := s.txnOffsetsVerifier(req)
	if len(denied) == 0 {
		return s.cfg.Groups.TxnOffsetCommit(c.ctx, req, verify)
	}
	sub := *req
	sub.Topics = allowed
	resp := s.cfg.Groups.TxnOffsetCommit(c.ctx, &sub, verify)
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

// txnOffsetsVerifier asks req's transaction coordinator whether a
// __consumer_offsets partition is in the producer's transaction (verifyTxn, as
// Produce's verification does); from v5 it adds the partition instead.
func (s *Server) txnOffsetsVerifier(req *kmsg.TxnOffsetCommitRequest) groups.TxnVerifier {
	if req.Version >= 5 {
		return func(ctx context.Context, partition int32) int16 { return s.addOffsetsPartitionTV2(ctx, req, partition) }
	}
	return func(ctx context.Context, partition int32) int16 {
		tp := txn.TopicPartition{Topic: txn.OffsetsTopic, Partition: partition}
		code := s.verifyTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp})[0]
		if code == kerr.NotEnoughReplicas.Code {
			return kerr.CoordinatorNotAvailable.Code // the transaction coordinator moves: retriable
		}
		return code
	}
}
