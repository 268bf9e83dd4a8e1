package kafkaapi

// OffsetCommit, key 8, versions 0..9.
//
// Behaviour (package groups): a member commits with its group's generation and member
// id (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS while the group
// completes a rebalance, FENCED_INSTANCE_ID for a replaced static member); a client
// outside group management commits with generation -1 to a group without members
// (v0 carries no generation and is such a commit). Each commit is appended to the
// group's __consumer_offsets partition and answered once it is committed and applied
// to Pebble (REQUEST_TIMED_OUT after offsets.commit.timeout.ms). Partitions of
// unknown topics get UNKNOWN_TOPIC_OR_PARTITION, metadata over 4096 bytes
// OFFSET_METADATA_TOO_LARGE. The commit timestamp of v1 is kept. A group this node
// does not coordinate gets NOT_COORDINATOR. A generation for a group that does not
// exist is ILLEGAL_GENERATION before v9, GROUP_ID_NOT_FOUND from v9. A share group's
// id is GROUP_ID_NOT_FOUND for every partition, as in Kafka.
//
// KIP-848 consumer groups (v9 is the first version for them; v8 is v7 made
// flexible): the generation is the member epoch. A member of the consumer
// protocol commits with v9+ (UNSUPPORTED_VERSION before, as Kafka answers), at its
// current epoch, or at an older one for partitions it still owns (KIP-1251);
// another epoch is STALE_MEMBER_EPOCH, an unknown member UNKNOWN_MEMBER_ID, and a
// client outside the group (epoch -1) commits only while the group is empty.
//
// Authorization, as in Kafka: READ on the group (GROUP_AUTHORIZATION_FAILED for every
// partition, nothing committed), then READ on each topic (TOPIC_AUTHORIZATION_FAILED
// for its partitions; the others are committed).
//
// Not implemented: retention_time_ms (v2..v4) is ignored: offsets.retention.minutes
// applies to every group, as in Kafka 2.1+.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.OffsetCommitRequest]{
		min: 0, max: 9,
		handle: (*Server).handleOffsetCommit,
		entries: func(r *kmsg.OffsetCommitRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleOffsetCommit(c *conn, _ *RequestHeader, req *kmsg.OffsetCommitRequest) kmsg.Response {
	refuse := func(topics []kmsg.OffsetCommitRequestTopic, code int16, resp *kmsg.OffsetCommitResponse) {
		for _, t := range topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if !c.allowed(acl.OpRead, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		refuse(req.Topics, kerr.GroupAuthorizationFailed.Code, resp)
		return resp
	}
	mayRead := c.allowedTopics(acl.OpRead)
	var allowed, denied []kmsg.OffsetCommitRequestTopic
	for _, t := range req.Topics {
		if mayRead(t.Topic) {
			allowed = append(allowed, t)
		} else {
			denied = append(denied, t)
		}
	}
	if len(denied) == 0 {
		return s.cfg.Groups.OffsetCommit(c.ctx, req)
	}
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	if len(allowed) > 0 {
		part := *req
		part.Topics = allowed
		resp = s.cfg.Groups.OffsetCommit(c.ctx, &part)
	}
	refuse(denied, kerr.TopicAuthorizationFailed.Code, resp)
	return resp
}
