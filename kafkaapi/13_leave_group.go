package kafkaapi

// LeaveGroup, key 13, versions 0..3.
//
// Behaviour: the member leaves at once and the group rebalances without it (or
// becomes Empty). v0..2 name one member, whose error is the top-level error; v3 lists
// members by member id or group.instance.id, each with its own error
// (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID). An empty group id is INVALID_GROUP_ID.
//
// Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED), as in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.LeaveGroupRequest]{
		min: 0, max: 3,
		handle:  (*Server).handleLeaveGroup,
		entries: func(r *kmsg.LeaveGroupRequest) int { return len(r.Members) },
	})
}

func (s *Server) handleLeaveGroup(c *conn, _ *RequestHeader, req *kmsg.LeaveGroupRequest) kmsg.Response {
	if !c.allowed(acl.OpRead, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	return s.cfg.Groups.LeaveGroup(req)
}
