package kafkaapi

// JoinGroup, key 11, versions 0..5.
//
// Behaviour (package groups): a new member of a group (empty member id) gets
// MEMBER_ID_REQUIRED with its member id on v4+ unless it is static (group.instance.id,
// v5), and joins with that id; the answer is held until every member has joined or
// the rebalance timeout (v0: the session timeout) passes, and the first rebalance
// of an empty group waits group.initial.rebalance.delay.ms for more members. The
// leader gets every member's metadata for the protocol chosen by all members
// (INCONSISTENT_GROUP_PROTOCOL if they share none, or for a join with no protocols).
// A static member that joins again takes over its old member's assignment without
// a rebalance. Errors: INVALID_GROUP_ID (empty group id), INVALID_SESSION_TIMEOUT
// (outside group.min/max.session.timeout.ms), UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
// GROUP_MAX_SIZE_REACHED (group.max.size), NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS; INCONSISTENT_GROUP_PROTOCOL (member id "") for the
// id of a share group, as in Kafka. A KIP-848 consumer group with members serves a
// classic member itself (JoinGroup answered at once, SyncGroup with the server
// assignor's partitions, Heartbeat telling it when to join again; KIP-848's online
// migration, groups/consumer_classic.go).
//
// Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED, nobody joins), as in
// Kafka.
//
// Not implemented: the join reason (v8+) and skip_assignment (v9+) are outside the
// served range.

import (
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/groups"
)

func init() {
	register(api[*kmsg.JoinGroupRequest]{
		min: 0, max: 5,
		handle:  (*Server).handleJoinGroup,
		entries: func(r *kmsg.JoinGroupRequest) int { return len(r.Protocols) },
	})
}

func (s *Server) handleJoinGroup(c *conn, hdr *RequestHeader, req *kmsg.JoinGroupRequest) kmsg.Response {
	if !c.allowed(acl.OpRead, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation = kerr.GroupAuthorizationFailed.Code, -1
		if req.Version < 7 {
			resp.Protocol = kmsg.StringPtr("")
		}
		return resp
	}
	return s.cfg.Groups.JoinGroup(c.ctx, groupClient(c, hdr), req)
}

// groupClient identifies the client of a group request as Kafka reports members:
// its client id and "/" followed by its IP address.
func groupClient(c *conn, hdr *RequestHeader) groups.Client {
	host := c.nc.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return groups.Client{ID: hdr.ClientID, Host: "/" + host}
}
