package kafkaapi

// ShareAcknowledge, key 79, versions 1..2 (v0 was Kafka 4.0's early access).
//
// Behaviour (package sharegroup): acknowledgements of records a member acquired,
// per partition: ACCEPT (1) and GAP (0) mark them acknowledged, RELEASE (2) makes
// them available again (archived once the delivery count reaches the limit),
// REJECT (3) archives them, RENEW (4, KIP-1222) extends the lock. A record not
// acquired by this member is INVALID_RECORD_STATE and nothing of that batch
// changes. The answer comes once the new state is durable. The share session's
// epoch moves as for ShareFetch (0 is INVALID_SHARE_SESSION_EPOCH; -1 closes it).
//
// Authorization, as in Kafka: READ on the group (GROUP_AUTHORIZATION_FAILED at the
// top), READ on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api[*kmsg.ShareAcknowledgeRequest]{
		min: 1, max: 2,
		handle: (*Server).handleShareAcknowledge,
		entries: func(r *kmsg.ShareAcknowledgeRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleShareAcknowledge(c *conn, _ *RequestHeader, req *kmsg.ShareAcknowledgeRequest) kmsg.Response {
	if code := s.shareRequestRefused(c, req.GroupID); code != 0 {
		resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
		resp.ErrorCode = code
		return resp
	}
	s.waitUnfenced(c, nil)
	c.shared = true
	return s.cfg.Shares.ShareAcknowledge(c.ctx, c.shareID, req, s.shareResolver(c))
}
