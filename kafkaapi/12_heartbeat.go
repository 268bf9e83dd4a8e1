package kafkaapi

// Heartbeat, key 12, versions 0..3.
//
// Behaviour: keeps a member's session alive (a member silent for its session
// timeout is removed and the group rebalances). REBALANCE_IN_PROGRESS tells a member
// to join again; ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID (v3,
// static members), INVALID_GROUP_ID, NOT_COORDINATOR as Kafka answers them.
//
// Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED), as in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.HeartbeatRequest]{
		min: 0, max: 3,
		handle: (*Server).handleHeartbeat,
	})
}

func (s *Server) handleHeartbeat(c *conn, _ *RequestHeader, req *kmsg.HeartbeatRequest) kmsg.Response {
	if !c.allowed(acl.OpRead, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	return s.cfg.Groups.Heartbeat(req)
}
