package kafkaapi

// Heartbeat, key 12, versions 0..3.
//
// Behaviour: keeps a member's session alive (a member silent for its session
// timeout is removed and the group rebalances). REBALANCE_IN_PROGRESS tells a member
// to join again; ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID (v3,
// static members), INVALID_GROUP_ID, NOT_COORDINATOR as Kafka answers them.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	register(api[*kmsg.HeartbeatRequest]{
		min: 0, max: 3,
		handle: (*Server).handleHeartbeat,
	})
}

func (s *Server) handleHeartbeat(_ *conn, _ *RequestHeader, req *kmsg.HeartbeatRequest) kmsg.Response {
	return s.cfg.Groups.Heartbeat(req)
}
