package kafkaapi

// DeleteTopics, key 20, versions 0..3.
//
// Behaviour: each named topic is removed from the cluster metadata in one
// transaction (topic and partition keys); every node then deletes its replicas'
// segments and indexes, and the group coordinators delete the topic's committed
// offsets (groups.Coordinator.TopicsDeleted). The answer waits until this node has
// deleted its data, or timeout_ms passes (REQUEST_TIMED_OUT). Unknown topics get
// UNKNOWN_TOPIC_OR_PARTITION; internal topics (__consumer_offsets) cannot be
// deleted (INVALID_REQUEST). Deletion cannot be switched off (Kafka's
// delete.topic.enable).
//
// Authorization: DELETE on each topic (TOPIC_AUTHORIZATION_FAILED, not deleted),
// checked before whether it exists, as in Kafka.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/cluster"
)

func init() {
	register(api[*kmsg.DeleteTopicsRequest]{
		min: 0, max: 3,
		handle:  (*Server).handleDeleteTopics,
		entries: func(r *kmsg.DeleteTopicsRequest) int { return len(r.TopicNames) + len(r.Topics) },
	})
}

func (s *Server) handleDeleteTopics(c *conn, _ *RequestHeader, req *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	ctx, cancel := context.WithTimeout(c.ctx, requestTimeout(req.TimeoutMillis))
	defer cancel()
	mayDelete := c.allowedTopics(acl.OpDelete)
	for _, name := range req.TopicNames {
		n := name
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic = &n
		switch {
		case !mayDelete(name):
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case cluster.IsInternalTopic(name):
			rt.ErrorCode = kerr.InvalidRequest.Code
		default:
			rev, err := s.meta.DeleteTopic(ctx, name)
			switch {
			case errors.Is(err, cluster.ErrUnknownTopic):
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case err != nil:
				c.logger.Warn("delete topic", "topic", name, "err", err)
				rt.ErrorCode = kerr.RequestTimedOut.Code
			default:
				if err := s.waitApplied(ctx, rev); err != nil {
					rt.ErrorCode = kerr.RequestTimedOut.Code
				}
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
