package kafkaapi

// SyncGroup, key 14, versions 0..3.
//
// Behaviour: after a rebalance, members send SyncGroup and wait; the leader's
// carries every member's assignment, which is stored with the group's metadata in
// __consumer_offsets before the group becomes Stable and each member gets its own
// assignment bytes, relayed without being read. In a Stable group the member's
// current assignment is answered at once. Members that do not sync within the
// rebalance timeout are removed. Errors: REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION,
// UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID (v3), INVALID_GROUP_ID, NOT_COORDINATOR.
//
// Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED), as in Kafka.
//
// Not implemented: protocol type and name checks (v5+) are outside the served range.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.SyncGroupRequest]{
		min: 0, max: 3,
		handle:  (*Server).handleSyncGroup,
		entries: func(r *kmsg.SyncGroupRequest) int { return len(r.GroupAssignment) },
	})
}

func (s *Server) handleSyncGroup(c *conn, _ *RequestHeader, req *kmsg.SyncGroupRequest) kmsg.Response {
	if !c.allowed(acl.OpRead, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	return s.cfg.Groups.SyncGroup(c.ctx, req)
}
