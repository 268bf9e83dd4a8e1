package kafkaapi

// DeleteShareGroupState, key 86, version 0.
//
// Behaviour: sent by a share group's coordinator (another node, share_states.go)
// to the leader of a partition, where Skiff keeps the share-partition (in Kafka it
// goes to the share coordinator). Each listed share-partition led here has its
// state deleted: written as deleted to __share_group_state and dropped from
// memory, so that the next consumption starts from share.auto.offset.reset. A
// partition not led here answers NOT_LEADER_OR_FOLLOWER, an unknown topic id or
// partition UNKNOWN_TOPIC_OR_PARTITION.
//
// Authorization, as in Kafka: CLUSTER_ACTION on the cluster (brokers have it;
// CLUSTER_AUTHORIZATION_FAILED for every partition).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.DeleteShareGroupStateRequest]{
		min: 0, max: 0,
		handle: (*Server).handleDeleteShareGroupState,
		entries: func(r *kmsg.DeleteShareGroupStateRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleDeleteShareGroupState(c *conn, _ *RequestHeader, req *kmsg.DeleteShareGroupStateRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	allowed := c.allowedCluster(acl.OpClusterAction)
	names := s.topicNames()
	ctx, cancel := context.WithTimeout(c.ctx, defaultRequestTimeout)
	defer cancel()
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			_, known := names[t.TopicID]
			if rp.ErrorCode = s.shareStateRequestCode(allowed, req.GroupID, known); rp.ErrorCode == 0 {
				rp.ErrorCode = s.applyShareState(ctx, req.GroupID, names[t.TopicID], t.TopicID, p.Partition, deleteShareState)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
