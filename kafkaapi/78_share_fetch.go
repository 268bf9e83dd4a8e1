package kafkaapi

// ShareFetch, key 78, versions 1..2 (v0 was Kafka 4.0's early access).
//
// Behaviour (package sharegroup): in a share session per member and broker (epoch
// 0 opens, each answered request moves it by one, -1 closes and releases what the
// member holds; so does the close of the connection of its last request, as in
// Kafka), acknowledgements are applied and made durable first
// (acknowledge_error_code per partition), then records are acquired from every
// partition of the session: released and expired ones first, then whole new
// batches below the high watermark, at most max_records (whole batches may exceed
// it), while the in-flight window is under group.share.partition.max.record.locks.
// With nothing to acquire the request waits up to max_wait_ms for new records or a
// lock that ends. acquired_records carry delivery counts.
//
// Authorization, as in Kafka: READ on the group (GROUP_AUTHORIZATION_FAILED at the
// top), READ on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions).
//
// Records are read committed (KIP-932): below the last stable offset; the records
// of aborted transactions and control batches are archived unseen.
//
// Not implemented: share_acquire_mode 1 (record limit) is served as 0 (batches);
// min_bytes is 1;
// node_endpoints and current_leader are not filled on NOT_LEADER_OR_FOLLOWER.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api[*kmsg.ShareFetchRequest]{
		min: 1, max: 2,
		handle: (*Server).handleShareFetch,
		entries: func(r *kmsg.ShareFetchRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			for _, t := range r.ForgottenTopicsData {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleShareFetch(c *conn, _ *RequestHeader, req *kmsg.ShareFetchRequest) kmsg.Response {
	if code := s.shareRequestRefused(c, req.GroupID); code != 0 {
		resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
		resp.ErrorCode = code
		return resp
	}
	s.waitUnfenced(c, nil)
	c.shared = true
	return s.cfg.Shares.ShareFetch(c.ctx, c.shareID, req, s.shareResolver(c))
}
