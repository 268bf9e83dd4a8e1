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

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/cluster"
)

func (s *Server) handleDeleteTopics(c *conn, req *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	for _, name := range req.TopicNames {
		n := name
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic = &n
		switch {
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
