package kafkaapi

// OffsetDelete, key 47, version 0 (its only version).
//
// Behaviour: the committed offsets of the listed partitions are deleted
// (tombstones in __consumer_offsets); partitions without a commit are no error.
// While a consumer group has members, partitions of topics a member subscribes to
// get GROUP_SUBSCRIBED_TO_TOPIC; a non-consumer group with members gets
// NON_EMPTY_GROUP. Unknown group: GROUP_ID_NOT_FOUND; empty group id:
// INVALID_GROUP_ID.
//
// Authorization, as in Kafka: DELETE on the group (GROUP_AUTHORIZATION_FAILED, nothing
// deleted), then READ on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions).
//
// Unlike Kafka, partitions of topics that no longer exist are not refused with
// UNKNOWN_TOPIC_OR_PARTITION, so that the offsets of a deleted topic can be removed.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.OffsetDeleteRequest]{
		min: 0, max: 0,
		handle: (*Server).handleOffsetDelete,
		entries: func(r *kmsg.OffsetDeleteRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleOffsetDelete(c *conn, _ *RequestHeader, req *kmsg.OffsetDeleteRequest) kmsg.Response {
	if !c.allowed(acl.OpDelete, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	mayRead := c.allowedTopics(acl.OpRead)
	part := *req
	part.Topics = nil
	var refused []kmsg.OffsetDeleteResponseTopic
	for _, t := range req.Topics {
		if mayRead(t.Topic) {
			part.Topics = append(part.Topics, t)
			continue
		}
		rt := kmsg.OffsetDeleteResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: kerr.TopicAuthorizationFailed.Code})
		}
		refused = append(refused, rt)
	}
	if len(refused) == 0 {
		return s.cfg.Groups.OffsetDelete(c.ctx, req)
	}
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if len(part.Topics) > 0 {
		resp = s.cfg.Groups.OffsetDelete(c.ctx, &part)
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp
}
