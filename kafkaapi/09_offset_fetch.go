package kafkaapi

// OffsetFetch, key 9, versions 0..9.
//
// Behaviour: the committed offsets of the listed partitions, read from Pebble (every
// commit is applied before it is acknowledged); a null topic list (v2+) asks for
// every committed offset of the group. A partition without a commit gets offset -1,
// empty metadata and no error; leader epoch (v5+) is -1 when the commit had none.
// NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS go in each partition for v0..v1
// and in the top-level error code for v2+.
//
// Authorization, as in Kafka: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED: at
// the top for v2+, for every partition before), then DESCRIBE on each topic: a named
// topic without it answers TOPIC_AUTHORIZATION_FAILED and offset -1 for its
// partitions, and a request for every offset of the group leaves such topics out.
//
// require_stable (v7, KIP-447): a partition for which an open transaction holds a
// pending offset (TxnOffsetCommit not yet committed or aborted) gets
// UNSTABLE_OFFSET_COMMIT, which the consumer retries; so does the whole request
// when it asks for every offset of the group and one is pending.
//
// v8+ asks for several groups at once: each is answered as a v7 request for it
// would be, with its own error code. v9 (KIP-848) names the member and its epoch:
// a consumer group's member must be at its current epoch (STALE_MEMBER_EPOCH,
// UNKNOWN_MEMBER_ID as the group's error); classic groups are not checked, as in
// Kafka. v10 (topic ids) is not advertised.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.OffsetFetchRequest]{
		min: 0, max: 9,
		handle: (*Server).handleOffsetFetch,
		entries: func(r *kmsg.OffsetFetchRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			for _, g := range r.Groups {
				for _, t := range g.Topics {
					n += topicEntries(len(t.Partitions))
				}
			}
			return n
		},
	})
}

func (s *Server) handleOffsetFetch(c *conn, _ *RequestHeader, req *kmsg.OffsetFetchRequest) kmsg.Response {
	if req.Version < 8 {
		return s.offsetFetchGroup(c, req)
	}
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	for _, rg := range req.Groups {
		resp.Groups = append(resp.Groups, s.offsetFetchOneOf(c, req, rg))
	}
	return resp
}

// offsetFetchOneOf answers one group of an OffsetFetch v8+ as a v7 request for
// it, after the member check of v9.
func (s *Server) offsetFetchOneOf(c *conn, req *kmsg.OffsetFetchRequest, rg kmsg.OffsetFetchRequestGroup) kmsg.OffsetFetchResponseGroup {
	out := kmsg.NewOffsetFetchResponseGroup()
	out.Group = rg.Group
	if req.Version >= 9 && c.allowed(acl.OpDescribe, acl.ResourceGroup, rg.Group) {
		if out.ErrorCode = s.cfg.Groups.OffsetFetchMemberCode(rg.Group, rg.MemberID, rg.MemberEpoch); out.ErrorCode != 0 {
			return out
		}
	}
	one := kmsg.NewPtrOffsetFetchRequest()
	one.SetVersion(7)
	one.Group, one.RequireStable = rg.Group, req.RequireStable
	if rg.Topics != nil {
		one.Topics = make([]kmsg.OffsetFetchRequestTopic, 0, len(rg.Topics))
		for _, t := range rg.Topics {
			one.Topics = append(one.Topics, kmsg.OffsetFetchRequestTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
	}
	r := s.offsetFetchGroup(c, one).(*kmsg.OffsetFetchResponse)
	out.ErrorCode = r.ErrorCode
	for _, t := range r.Topics {
		ot := kmsg.NewOffsetFetchResponseGroupTopic()
		ot.Topic = t.Topic
		for _, p := range t.Partitions {
			op := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			op.Partition, op.Offset, op.LeaderEpoch, op.Metadata, op.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			ot.Partitions = append(ot.Partitions, op)
		}
		out.Topics = append(out.Topics, ot)
	}
	return out
}

// offsetFetchGroup answers an OffsetFetch of one group (v0..v7).
func (s *Server) offsetFetchGroup(c *conn, req *kmsg.OffsetFetchRequest) kmsg.Response {
	// refuse answers topics with code and offset -1 for each partition.
	refuse := func(resp *kmsg.OffsetFetchResponse, topics []kmsg.OffsetFetchRequestTopic, code int16) {
		for _, t := range topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.Metadata, rp.ErrorCode = p, -1, kmsg.StringPtr(""), code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if !c.allowed(acl.OpDescribe, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		if req.Version >= 2 {
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		} else {
			refuse(resp, req.Topics, kerr.GroupAuthorizationFailed.Code)
		}
		return resp
	}
	if s.authorizer() == nil {
		return s.cfg.Groups.OffsetFetch(req)
	}
	if req.Topics == nil { // every committed offset: only of topics it may describe
		resp := s.cfg.Groups.OffsetFetch(req)
		kept := resp.Topics[:0]
		for _, t := range resp.Topics {
			if c.may(acl.OpDescribe, acl.ResourceTopic, t.Topic) {
				kept = append(kept, t)
			}
		}
		resp.Topics = kept
		return resp
	}
	mayDescribe := c.allowedTopics(acl.OpDescribe)
	var allowed, denied []kmsg.OffsetFetchRequestTopic
	for _, t := range req.Topics {
		if mayDescribe(t.Topic) {
			allowed = append(allowed, t)
		} else {
			denied = append(denied, t)
		}
	}
	part := *req
	part.Topics = allowed
	if part.Topics == nil {
		part.Topics = []kmsg.OffsetFetchRequestTopic{} // named topics, none of them allowed: not "every topic"
	}
	resp := s.cfg.Groups.OffsetFetch(&part)
	if resp.ErrorCode == 0 {
		refuse(resp, denied, kerr.TopicAuthorizationFailed.Code)
	}
	return resp
}
