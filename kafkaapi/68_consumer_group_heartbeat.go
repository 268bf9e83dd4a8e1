package kafkaapi

// ConsumerGroupHeartbeat, key 68, versions 0..1 (KIP-848).
//
// Behaviour (package groups, consumer.go): joins (member epoch 0), keeps alive,
// reconciles and leaves (-1; -2 for a static member) a member of a consumer group
// whose partitions the coordinator assigns with a server-side assignor (uniform,
// the default, or range: group.consumer.assignors). The answer carries the member's
// epoch and, when it changed, its assignment; a member receives a partition only
// after its previous owner revoked it. Subscriptions are topic names or a regex
// matched against whole topic names, internal topics included, as in Kafka. Members
// choose their member id (v1 semantics; v0 is served the same way). Errors:
// INVALID_REQUEST (missing fields), UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION,
// UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID,
// GROUP_MAX_SIZE_REACHED (group.max.size), GROUP_ID_NOT_FOUND (a classic group with
// members that group.consumer.migration.policy does not let upgrade, or whose
// embedded protocol is not "consumer"; and a share group's id, "Group G is not a
// consumer group.", as in Kafka), NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS.
// Classic members in the same group: groups/consumer_classic.go.
//
// Authorization, as in Kafka: READ on the group (GROUP_AUTHORIZATION_FAILED), and
// DESCRIBE on every subscribed topic name (TOPIC_AUTHORIZATION_FAILED). A regex
// matches only topics the member's principal may DESCRIBE (Kafka's KAFKA-18813),
// under the ACLs current at each heartbeat: a granted or removed right changes the
// member's subscription at its next heartbeat. (Kafka resolves a regex once per
// group, with the rights of the member whose heartbeat refreshed it; Skiff matches
// each member's regex with its own principal's rights.) After a coordinator
// failover a member's regex keeps the topics of its target assignment until its
// first heartbeat to the new coordinator tells its rights.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.ConsumerGroupHeartbeatRequest]{
		min: 0, max: 1,
		handle: (*Server).handleConsumerGroupHeartbeat,
		entries: func(r *kmsg.ConsumerGroupHeartbeatRequest) int {
			return len(r.SubscribedTopicNames) + topicEntriesOf(r.Topics)
		},
	})
}

func topicEntriesOf(ts []kmsg.ConsumerGroupHeartbeatRequestTopic) int {
	n := 0
	for _, t := range ts {
		n += max(1, len(t.Partitions))
	}
	return n
}

func (s *Server) handleConsumerGroupHeartbeat(c *conn, hdr *RequestHeader, req *kmsg.ConsumerGroupHeartbeatRequest) kmsg.Response {
	refuse := func(code int16) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = code
		return resp
	}
	if !c.allowed(acl.OpRead, acl.ResourceGroup, req.Group) {
		return refuse(kerr.GroupAuthorizationFailed.Code)
	}
	for _, t := range req.SubscribedTopicNames {
		if !c.allowed(acl.OpDescribe, acl.ResourceTopic, t) {
			return refuse(kerr.TopicAuthorizationFailed.Code)
		}
	}
	cl := groupClient(c, hdr)
	cl.MayDescribe = c.topicDescribeFilter()
	return s.cfg.Groups.ConsumerGroupHeartbeat(c.ctx, cl, req)
}
