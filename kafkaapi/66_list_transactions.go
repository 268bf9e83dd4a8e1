package kafkaapi

// ListTransactions, key 66, versions 0..1 (KIP-664, KIP-994).
//
// Behaviour (package txn): the transactional ids coordinated by this broker (a
// client asks every broker), filtered by state names, producer ids and (v1) open
// for longer than duration_filter_ms. Unknown state names are listed in
// unknown_state_filters and match nothing.
//
// Authorization, as in Kafka: the ids the client may not DESCRIBE are left out.
//
// Not implemented: v2 (transactional id pattern).

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/txn"
)

func init() {
	register(api[*kmsg.ListTransactionsRequest]{
		min: 0, max: 1,
		handle: (*Server).handleListTransactions,
		entries: func(r *kmsg.ListTransactionsRequest) int {
			return topicEntries(len(r.StateFilters) + len(r.ProducerIDFilters))
		},
	})
}

// txnStates are the state names ListTransactions filters on.
var txnStates = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead"}

func (s *Server) handleListTransactions(c *conn, _ *RequestHeader, req *kmsg.ListTransactionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	for _, f := range req.StateFilters {
		if !slices.Contains(txnStates, f) {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, f)
		}
	}
	if s.cfg.Txn == nil {
		return resp
	}
	now := time.Now()
	ds := s.cfg.Txn.List(func(d txn.Description) bool {
		switch {
		case len(req.StateFilters) > 0 && !slices.Contains(req.StateFilters, txn.StateName(d.State)):
			return false
		case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, d.ProducerID):
			return false
		case !c.may(acl.OpDescribe, acl.ResourceTransactionalID, d.ID):
			return false
		case req.DurationFilterMillis > 0 && (d.Started.IsZero() || now.Sub(d.Started) < time.Duration(req.DurationFilterMillis)*time.Millisecond):
			return false
		}
		return true
	})
	for _, d := range ds {
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = d.ID, d.ProducerID, txn.StateName(d.State)
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}
