package kafkaapi

// DeleteShareGroupOffsets, key 92, version 0.
//
// Behaviour: for a group this node coordinates and that has no members (else
// NON_EMPTY_GROUP), the state of every partition of each named topic is deleted:
// the next consumption starts again from share.auto.offset.reset.
//
// Authorization, as in Kafka: DELETE on the group (GROUP_AUTHORIZATION_FAILED), READ
// on each topic (TOPIC_AUTHORIZATION_FAILED).
//
// Not implemented: partitions led by another node than the group's coordinator
// answer NOT_LEADER_OR_FOLLOWER for their topic (see AlterShareGroupOffsets).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/sharegroup"
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
	if s.cfg.ShareGroups.Members(req.GroupID) > 0 {
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		return resp
	}
	ctx, cancel := context.WithTimeout(c.ctx, defaultRequestTimeout)
	defer cancel()
	for _, t := range req.Topics {
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
			for p := int32(0); p < info.Partitions && rt.ErrorCode == 0; p++ {
				lp, code := s.localPartition(t.Topic, p)
				if code != 0 {
					rt.ErrorCode = code
					break
				}
				rt.ErrorCode = s.cfg.Shares.DeleteState(ctx, sharegroup.Key{Group: req.GroupID, TopicID: info.ID, Partition: p}, t.Topic, lp)
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
