package kafkaapi

// AddPartitionsToTxn, key 24, versions 0..4, and 5 with transaction version 2.
//
// Behaviour (package txn): the partitions join the producer's transaction, which
// starts if none is open; the answer comes once the transaction's state is
// committed to __transaction_state. A partition of an unknown topic gets
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED; a stale epoch
// INVALID_PRODUCER_EPOCH. While the markers of the producer's previous
// transaction are being written the request waits for them (up to the
// coordinator's commit timeout, then CONCURRENT_TRANSACTIONS). A client's
// requests are pipelined: the connection reads the next request while one
// waits (pipeline.go), and the producer's requests that wait together are
// written together.
//
// v4 batches several transactional ids (transactions); an entry with verify_only
// adds nothing and answers, per partition, whether it is in the id's open
// transaction (txn.Coordinator.Verify): partition leaders ask so before the first
// transactional batch of a producer (KIP-890 part 1).
//
// Authorization, as in Kafka: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition) and on each topic
// (TOPIC_AUTHORIZATION_FAILED for its partitions, the others
// OPERATION_NOT_ATTEMPTED); a v4 request with a verify_only entry needs
// CLUSTER_ACTION on the cluster (a broker's: CLUSTER_AUTHORIZATION_FAILED).
//
// v5 (transaction version 2; served only with Config.TxnV2, not advertised
// yet) is v4 for brokers only (CLUSTER_ACTION on the cluster for the whole
// request), plus the brokers' add mode: an entry without verify_only adds the
// partitions implicitly (txn.Coordinator.AddPartitions, implicit), as the
// partition leaders of a producer that sends Produce v12 ask (txn_add.go).
// Kafka's v5 only adds TRANSACTION_ABORTABLE to the coordinator's answers;
// Skiff's coordinator answers INVALID_TXN_STATE there, which the leader maps.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/txn"
)

func init() {
	register(api[*kmsg.AddPartitionsToTxnRequest]{
		min: 0, max: 4, txnV2Max: 5,
		handle: (*Server).handleAddPartitionsToTxn,
		// A client's requests (v0-v3) wait together (pipeline.go); v4 carries
		// brokers' batched and verify-only requests, answered in order.
		pipelined: func(version int16, _ bool) bool { return version < 4 },
		entries: func(r *kmsg.AddPartitionsToTxnRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			for _, x := range r.Transactions {
				for _, t := range x.Topics {
					n += topicEntries(len(t.Partitions))
				}
			}
			return n
		},
	})
}

func (s *Server) handleAddPartitionsToTxn(c *conn, _ *RequestHeader, req *kmsg.AddPartitionsToTxnRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version >= 4 {
		for _, x := range req.Transactions {
			if (x.VerifyOnly || req.Version >= 5) && !c.allowedCluster(acl.OpClusterAction) {
				resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				return resp
			}
		}
		for _, x := range req.Transactions {
			rx := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rx.TransactionalID = x.TransactionalID
			var topics []kmsg.AddPartitionsToTxnRequestTopic
			for _, t := range x.Topics {
				topics = append(topics, kmsg.AddPartitionsToTxnRequestTopic{Topic: t.Topic, Partitions: t.Partitions})
			}
			var answer []kmsg.AddPartitionsToTxnResponseTopic
			if req.Version >= 5 && !x.VerifyOnly {
				answer = s.addImplicitly(c.ctx, x.TransactionalID, x.ProducerID, x.ProducerEpoch, topics)
			} else {
				answer = s.addPartitions(c, x.TransactionalID, x.ProducerID, x.ProducerEpoch, x.VerifyOnly, topics)
			}
			for _, rt := range answer {
				t := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				t.Topic = rt.Topic
				for _, rp := range rt.Partitions {
					t.Partitions = append(t.Partitions, kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{Partition: rp.Partition, ErrorCode: rp.ErrorCode})
				}
				rx.Topics = append(rx.Topics, t)
			}
			resp.Transactions = append(resp.Transactions, rx)
		}
		return resp
	}
	// A client's request (v0-v3): authorized here, in the connection's loop, and
	// added from a goroutine, answered in order (pipeline.go): the loop reads the
	// client's next AddPartitionsToTxn meanwhile, and the coordinator writes
	// those that wait together in one record.
	if s.cfg.Txn != nil && c.allowed(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID) && allTopicsAllowed(c, req.Topics) {
		c.ackWait = func(ctx context.Context) {
			code, codes := s.cfg.Txn.AddPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, txnPartitions(req.Topics), false)
			resp.Topics = addPartitionsAnswer(req.Topics, code, codes)
		}
		c.acks.adds = true
		return resp
	}
	resp.Topics = s.addPartitions(c, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, req.Topics)
	return resp
}

// txnPartitions lists the partitions of topics.
func txnPartitions(topics []kmsg.AddPartitionsToTxnRequestTopic) []txn.TopicPartition {
	var parts []txn.TopicPartition
	for _, t := range topics {
		for _, p := range t.Partitions {
			parts = append(parts, txn.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	return parts
}

// addPartitions adds (or, verifyOnly, checks) the partitions of topics in the
// transaction of id and returns each one's code.
func (s *Server) addPartitions(c *conn, id string, pid int64, epoch int16, verifyOnly bool, topics []kmsg.AddPartitionsToTxnRequestTopic) []kmsg.AddPartitionsToTxnResponseTopic {
	var parts []txn.TopicPartition
	for _, t := range topics {
		for _, p := range t.Partitions {
			parts = append(parts, txn.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	code, codes := kerr.TransactionalIDAuthorizationFailed.Code, map[txn.TopicPartition]int16(nil)
	switch {
	case s.cfg.Txn == nil:
	case !verifyOnly && !c.allowed(acl.OpWrite, acl.ResourceTransactionalID, id):
	case !verifyOnly && !allTopicsAllowed(c, topics):
		code, codes = 0, make(map[txn.TopicPartition]int16, len(parts))
		mayWrite := c.allowedTopics(acl.OpWrite)
		for _, tp := range parts {
			codes[tp] = kerr.OperationNotAttempted.Code
			if !mayWrite(tp.Topic) {
				codes[tp] = kerr.TopicAuthorizationFailed.Code
			}
		}
	case verifyOnly:
		code, codes = 0, make(map[txn.TopicPartition]int16, len(parts))
		for _, tp := range parts {
			codes[tp] = s.cfg.Txn.Verify(id, pid, epoch, tp)
		}
	default:
		code, codes = s.cfg.Txn.AddPartitions(c.ctx, id, pid, epoch, parts, false)
	}
	return addPartitionsAnswer(topics, code, codes)
}

// addPartitionsAnswer is the answer for topics: each partition's code in codes,
// or code.
func addPartitionsAnswer(topics []kmsg.AddPartitionsToTxnRequestTopic, code int16, codes map[txn.TopicPartition]int16) []kmsg.AddPartitionsToTxnResponseTopic {
	var out []kmsg.AddPartitionsToTxnResponseTopic
	for _, t := range topics {
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
		out = append(out, rt)
	}
	return out
}

// allTopicsAllowed reports whether the client may WRITE every topic of topics.
func allTopicsAllowed(c *conn, topics []kmsg.AddPartitionsToTxnRequestTopic) bool {
	mayWrite := c.allowedTopics(acl.OpWrite)
	for _, t := range topics {
		if !mayWrite(t.Topic) {
			return false
		}
	}
	return true
}
