package kafkaapi

// ShareGroupHeartbeat, key 76, version 1 (v0 was Kafka 4.0's early access).
//
// Behaviour: a member joins a share group (member epoch 0, with the id it chose),
// heartbeats, and leaves (epoch -1); every member is assigned every partition of
// the topics it subscribes to (package sharegroup). A group this node does not
// coordinate is NOT_COORDINATOR; an unknown member UNKNOWN_MEMBER_ID; a stale epoch
// FENCED_MEMBER_EPOCH (the member's previous epoch is accepted: its last answer
// may have been lost). A heartbeat that changes the group is answered once its
// records are committed in the group's partition of __consumer_offsets, from which
// the next coordinator loads the group (COORDINATOR_LOAD_IN_PROGRESS meanwhile):
// members keep their ids and epochs across a failover.
//
// Authorization, as in Kafka: READ on the group (GROUP_AUTHORIZATION_FAILED), and
// DESCRIBE on each subscribed topic (TOPIC_AUTHORIZATION_FAILED).
//
// A group id that is a classic or KIP-848 consumer group (or has only committed
// offsets) is refused with GROUP_ID_NOT_FOUND, "Group G is not a share group.", as
// in Kafka, which keeps one group per id; a refused first heartbeat leaves no
// group behind.
//
// Not implemented: racks do not shape the assignment.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/sharegroup"
)

func init() {
	register(api[*kmsg.ShareGroupHeartbeatRequest]{
		min: 1, max: 1,
		handle:  (*Server).handleShareGroupHeartbeat,
		entries: func(r *kmsg.ShareGroupHeartbeatRequest) int { return topicEntries(len(r.SubscribedTopicNames)) },
	})
}

func (s *Server) handleShareGroupHeartbeat(c *conn, hdr *RequestHeader, req *kmsg.ShareGroupHeartbeatRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	if !c.allowed(acl.OpRead, acl.ResourceGroup, req.GroupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	for _, t := range req.SubscribedTopicNames {
		if !c.allowed(acl.OpDescribe, acl.ResourceTopic, t) {
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			return resp
		}
	}
	if code := s.coordinatesGroup(req.GroupID); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	gc := groupClient(c, hdr)
	return s.cfg.ShareGroups.Heartbeat(c.ctx, req, sharegroup.Client{ID: gc.ID, Host: gc.Host})
}
