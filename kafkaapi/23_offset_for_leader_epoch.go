package kafkaapi

// OffsetForLeaderEpoch, key 23, versions 0..3.
//
// Behaviour: for each partition this broker leads, the largest leader epoch at or
// below the requested one that the leader's epoch checkpoint knows (v1+), and the
// offset where that epoch ended: the start of the next epoch, or the log end offset
// for the current epoch (KIP-101, KIP-279). An epoch newer than any known gives
// leader_epoch -1 and end_offset -1. Followers ask it before fetching from a new
// leader and truncate to the answer; consumers (KIP-320) use it to detect truncation.
// current_leader_epoch (v2+) is checked as in Fetch. replica_id (v3) is not needed.
//
// Authorization, as in Kafka: CLUSTER_ACTION on the cluster (followers) answers every
// topic; otherwise each needs DESCRIBE (TOPIC_AUTHORIZATION_FAILED for its partitions).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.OffsetForLeaderEpochRequest]{
		min: 0, max: 3,
		handle: (*Server).handleOffsetForLeaderEpoch,
		entries: func(r *kmsg.OffsetForLeaderEpochRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleOffsetForLeaderEpoch(c *conn, _ *RequestHeader, req *kmsg.OffsetForLeaderEpochRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	mayDescribe := func(string) bool { return true }
	if !c.mayCluster(acl.OpClusterAction) {
		mayDescribe = c.allowedTopics(acl.OpDescribe)
	}
	for _, t := range req.Topics {
		authorized := mayDescribe(t.Topic)
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, rp := range t.Partitions {
			pr := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			pr.Partition, pr.LeaderEpoch, pr.EndOffset = rp.Partition, -1, -1
			p, code := s.localPartition(t.Topic, rp.Partition)
			if !authorized {
				code = kerr.TopicAuthorizationFailed.Code
			} else if code == 0 {
				code = checkLeaderEpoch(rp.CurrentLeaderEpoch, p.LeaderEpoch())
			}
			if code != 0 {
				pr.ErrorCode = code
			} else {
				pr.LeaderEpoch, pr.EndOffset = p.EndOffsetForEpoch(rp.LeaderEpoch)
			}
			rt.Partitions = append(rt.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
