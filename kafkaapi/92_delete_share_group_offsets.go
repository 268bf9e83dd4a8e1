package kafkaapi

// DeleteShareGroupOffsets, key 92, version 0.
//
// Behaviour: for a group this node coordinates and that has no members (else
// NON_EMPTY_GROUP), the state of every partition of each named topic is deleted:
// the next consumption starts again from share.auto.offset.reset. The id of a
// classic or consumer group is GROUP_ID_NOT_FOUND, "Group G is not a share
// group.", as in Kafka.
//
// Authorization, as in Kafka: DELETE on the group (GROUP_AUTHORIZATION_FAILED), READ
// on each topic (TOPIC_AUTHORIZATION_FAILED).
//
// Each partition's state is deleted at its leader, here or on another node with
// DeleteShareGroupState (share_states.go); a topic's error is the first of its
// partitions' (LEADER_NOT_AVAILABLE, retriable, for a partition without a
// reachable leader).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.DeleteShareGroupOffsetsRequest]{
		min: 0, max: 0,
		handle:  (*Server).handleDeleteShareGroupOffsets,
		entries: func(r *kmsg.DeleteShareGroupOffsetsRequest) int { return len(r.Topics) },
	})
}

func (s *Server) handleDeleteShareGroupOffsets(c *conn, _ *RequestHeader, req *kmsg.DeleteShareGroupOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	if !c.allowed(acl.OpDelete, acl.ResourceGroup, req.GroupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	if code := s.coordinatesGroup(req.GroupID); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	if msg := s.notShareGroup(req.GroupID); msg != "" {
		resp.ErrorCode, resp.ErrorMessage = kerr.GroupIDNotFound.Code, &msg
		return resp
	}
	if s.cfg.ShareGroups.Members(req.GroupID) > 0 {
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		return resp
	}
	ctx, cancel := context.WithTimeout(c.ctx, defaultRequestTimeout)
	defer cancel()
	targets := map[int][]*shareTarget{} // by topic index in the answer
	var all []*shareTarget
	for i, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		info, ok := s.cache.Topic(t.Topic)
		rt.TopicID = info.ID
		switch {
		case !c.allowed(acl.OpRead, acl.ResourceTopic, t.Topic):
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case !ok:
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			for p := range info.Partitions {
				st := &shareTarget{Topic: t.Topic, ID: info.ID, Partition: p, Start: deleteShareState}
				targets[i] = append(targets[i], st)
				all = append(all, st)
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	s.changeShareStates(ctx, req.GroupID, all)
	for i, ts := range targets {
		for _, t := range ts {
			if resp.Topics[i].ErrorCode == 0 {
				resp.Topics[i].ErrorCode = t.Code
			}
		}
	}
	return resp
}
