package kafkaapi

// AlterShareGroupOffsets, key 91, version 0.
//
// Behaviour: for a group this node coordinates, once it has loaded the group's
// partition (else COORDINATOR_LOAD_IN_PROGRESS), and that has no members (else
// NON_EMPTY_GROUP), each named share-partition's start offset (SPSO) becomes the
// given offset with nothing in flight, durably, as if every record below it were
// done; an offset outside [log start, high watermark] is OFFSET_OUT_OF_RANGE.
// The id of a classic or consumer group is GROUP_ID_NOT_FOUND, "Group G is not a
// share group.", as in Kafka, and is left as it is.
//
// Authorization, as in Kafka: ALTER on the group (GROUP_AUTHORIZATION_FAILED), READ
// on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions).
//
// The share-partition lives at its partition's leader: one led by another node is
// changed there, with InitializeShareGroupState (share_states.go). A partition
// without a leader, or whose leader cannot be reached, answers
// LEADER_NOT_AVAILABLE (retriable); an unknown topic or partition
// UNKNOWN_TOPIC_OR_PARTITION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.AlterShareGroupOffsetsRequest]{
		min: 0, max: 0,
		handle: (*Server).handleAlterShareGroupOffsets,
		entries: func(r *kmsg.AlterShareGroupOffsetsRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleAlterShareGroupOffsets(c *conn, _ *RequestHeader, req *kmsg.AlterShareGroupOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if code, msg := s.shareOffsetsAdmin(c, req.GroupID); code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp
	}
	ctx, cancel := context.WithTimeout(c.ctx, defaultRequestTimeout)
	defer cancel()
	if code := s.cfg.ShareGroups.Ensure(ctx, req.GroupID); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	var targets []*shareTarget
	var at [][2]int // where each target's code goes: topic and partition index
	for ti, t := range req.Topics {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		info, exists := s.cache.Topic(t.Topic)
		rt.TopicID = info.ID
		allowed := c.allowed(acl.OpRead, acl.ResourceTopic, t.Topic)
		for pi, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case !allowed:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !exists || p.Partition < 0 || p.Partition >= info.Partitions:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				targets = append(targets, &shareTarget{Topic: t.Topic, ID: info.ID, Partition: p.Partition, Start: p.StartOffset})
				at = append(at, [2]int{ti, pi})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	s.changeShareStates(ctx, req.GroupID, targets)
	for i, t := range targets {
		resp.Topics[at[i][0]].Partitions[at[i][1]].ErrorCode = t.Code
	}
	return resp
}

// shareOffsetsAdmin checks that the client may ALTER group, that this node
// coordinates it, that it is not another type's group and that it has no
// members: 0, or the code (and message) to answer.
func (s *Server) shareOffsetsAdmin(c *conn, group string) (int16, *string) {
	switch {
	case !c.allowed(acl.OpAlter, acl.ResourceGroup, group):
		return kerr.GroupAuthorizationFailed.Code, nil
	case s.coordinatesGroup(group) != 0:
		return s.coordinatesGroup(group), nil
	case s.notShareGroup(group) != "":
		return kerr.GroupIDNotFound.Code, kmsg.StringPtr(s.notShareGroup(group))
	case s.cfg.ShareGroups.Members(group) > 0:
		return kerr.NonEmptyGroup.Code, nil
	}
	return 0, nil
}
