package kafkaapi

// DeleteTopics, key 20, versions 0..6 (4+ flexible; 5 adds messages; 6 names
// topics by name or by id, KIP-516).
//
// Behaviour: each named topic is removed from the cluster metadata in one
// transaction (topic and partition keys); every node then deletes its replicas'
// segments and indexes, and the group coordinators delete the topic's committed
// offsets (groups.Coordinator.TopicsDeleted). The answer waits until this node has
// deleted its data, or timeout_ms passes (REQUEST_TIMED_OUT). Unknown topics get
// UNKNOWN_TOPIC_OR_PARTITION; internal topics (__consumer_offsets) cannot be
// deleted (INVALID_REQUEST). From v6 a topic is named by name or by id (both:
// INVALID_REQUEST; an unknown id: UNKNOWN_TOPIC_ID), and the answer gives both.
// Deletion cannot be switched off (Kafka's delete.topic.enable).
//
// Quota: the partitions of the topics deleted count against the client's
// controller_mutation_rate (mutationQuota); from v5 a topic named while the client
// is in debt is refused with THROTTLING_QUOTA_EXCEEDED.
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
		min: 0, max: 6,
		handle:  (*Server).handleDeleteTopics,
		entries: func(r *kmsg.DeleteTopicsRequest) int { return len(r.TopicNames) + len(r.Topics) },
	})
}

func (s *Server) handleDeleteTopics(c *conn, hdr *RequestHeader, req *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	ctx, cancel := context.WithTimeout(c.ctx, requestTimeout(req.TimeoutMillis))
	defer cancel()
	mayDelete := c.allowedTopics(acl.OpDelete)
	mutations := mutationQuota{c: c, hdr: hdr, strict: req.GetVersion() >= 5}
	named := req.Topics // v6+
	for _, name := range req.TopicNames {
		named = append(named, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(name)})
	}
	for _, t := range named {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		switch {
		case t.Topic != nil && t.TopicID != [16]byte{}:
			rt.ErrorCode, rt.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("name a topic by its name or by its id, not both")
		case t.Topic == nil:
			name, ok := s.topicByID(t.TopicID)
			if !ok {
				rt.ErrorCode = kerr.UnknownTopicID.Code
				break
			}
			rt.ErrorCode, rt.ErrorMessage = s.deleteTopic(ctx, c, name, mayDelete, mutations)
			if rt.ErrorCode != kerr.TopicAuthorizationFailed.Code {
				rt.Topic = &name // the client may learn a name it may delete
			}
		default:
			if topic, ok := s.cache.Topic(*t.Topic); ok && mayDelete(*t.Topic) {
				rt.TopicID = topic.ID
			}
			rt.ErrorCode, rt.ErrorMessage = s.deleteTopic(ctx, c, *t.Topic, mayDelete, mutations)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// deleteTopic deletes one topic and waits until this node has deleted its data;
// it returns the topic's error code and message.
func (s *Server) deleteTopic(ctx context.Context, c *conn, name string, mayDelete func(string) bool, mutations mutationQuota) (int16, *string) {
	switch {
	case !mayDelete(name):
		return kerr.TopicAuthorizationFailed.Code, nil
	case cluster.IsInternalTopic(name):
		return kerr.InvalidRequest.Code, nil
	}
	topic, known := s.cache.Topic(name)
	if known {
		if err := mutations.admit(); err != nil {
			return errorCode(err), kmsg.StringPtr(err.Error())
		}
	}
	rev, err := s.meta.DeleteTopic(ctx, name)
	switch {
	case errors.Is(err, cluster.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code, nil
	case err != nil:
		c.logger.Warn("delete topic", "topic", name, "err", err)
		return kerr.RequestTimedOut.Code, nil
	}
	mutations.record(topic.Partitions)
	if err := s.waitApplied(ctx, rev); err != nil {
		return kerr.RequestTimedOut.Code, nil
	}
	return 0, nil
}
