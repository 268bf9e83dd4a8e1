package kafkaapi

// DescribeTransactions, key 65, version 0 (KIP-664).
//
// Behaviour (package txn): for each transactional id coordinated here, its state
// (Kafka's names: Empty, Ongoing, PrepareCommit, ...), producer id and epoch,
// timeout, the start of its open transaction (-1: none) and its partitions. An id
// of another coordinator gets NOT_COORDINATOR, an unknown one
// TRANSACTIONAL_ID_NOT_FOUND.
//
// Authorization, as in Kafka: DESCRIBE on each transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); partitions of topics the client may not
// DESCRIBE are left out.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/txn"
)

func init() {
	register(api[*kmsg.DescribeTransactionsRequest]{
		min: 0, max: 0,
		handle:  (*Server).handleDescribeTransactions,
		entries: func(r *kmsg.DescribeTransactionsRequest) int { return topicEntries(len(r.TransactionalIDs)) },
	})
}

func (s *Server) handleDescribeTransactions(c *conn, _ *RequestHeader, req *kmsg.DescribeTransactionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		if s.cfg.Txn == nil || !c.allowed(acl.OpDescribe, acl.ResourceTransactionalID, id) {
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		d, code := s.cfg.Txn.Describe(id)
		st.ErrorCode = code
		if code == 0 {
			st.State, st.ProducerID, st.ProducerEpoch = txn.StateName(d.State), d.ProducerID, d.Epoch
			st.TimeoutMillis = int32(d.Timeout.Milliseconds())
			if !d.Started.IsZero() {
				st.StartTimestamp = d.Started.UnixMilli()
			}
			for _, tp := range d.Partitions {
				if !c.may(acl.OpDescribe, acl.ResourceTopic, tp.Topic) {
					continue
				}
				if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
					st.Topics = append(st.Topics, kmsg.DescribeTransactionsResponseTransactionStateTopic{Topic: tp.Topic})
				}
				t := &st.Topics[len(st.Topics)-1]
				t.Partitions = append(t.Partitions, tp.Partition)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}
