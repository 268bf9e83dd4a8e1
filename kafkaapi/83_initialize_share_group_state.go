package kafkaapi

// InitializeShareGroupState, key 83, version 0.
//
// Behaviour: sent by a share group's coordinator (another node, share_states.go)
// to the leader of a partition, where Skiff keeps the share-partition (in Kafka it
// goes to the share coordinator, which keeps the state). Each listed
// share-partition led here gets the given start offset (SPSO) with nothing in
// flight, applied to the in-memory window and answered once durable in
// __share_group_state. A partition not led here answers NOT_LEADER_OR_FOLLOWER,
// an unknown topic id or partition UNKNOWN_TOPIC_OR_PARTITION, a start offset
// outside [log start, last stable offset] OFFSET_OUT_OF_RANGE. A start offset of
// -1 is Kafka's uninitialized one (its group coordinator sends it when a share
// group first subscribes to a topic): accepted, as in Kafka, the state is
// dropped so that the share-partition starts again from share.auto.offset.reset
// (as DeleteShareGroupState does). Below -1 is INVALID_REQUEST (Kafka's share
// coordinator does not check it).
//
// Not implemented: the state epoch is not checked (the group coordinator checks
// that the group is empty before it sends the request).
//
// Authorization, as in Kafka: CLUSTER_ACTION on the cluster (brokers have it;
// CLUSTER_AUTHORIZATION_FAILED for every partition).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.InitializeShareGroupStateRequest]{
		min: 0, max: 0,
		handle: (*Server).handleInitializeShareGroupState,
		entries: func(r *kmsg.InitializeShareGroupStateRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleInitializeShareGroupState(c *conn, _ *RequestHeader, req *kmsg.InitializeShareGroupStateRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	allowed := c.allowedCluster(acl.OpClusterAction)
	names := s.topicNames()
	ctx, cancel := context.WithTimeout(c.ctx, defaultRequestTimeout)
	defer cancel()
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			_, known := names[t.TopicID]
			rp.ErrorCode = s.shareStateRequestCode(allowed, req.GroupID, known)
			if rp.ErrorCode == 0 && p.StartOffset < deleteShareState {
				rp.ErrorCode = kerr.InvalidRequest.Code
			}
			if rp.ErrorCode == 0 {
				rp.ErrorCode = s.applyShareState(ctx, req.GroupID, names[t.TopicID], t.TopicID, p.Partition, p.StartOffset)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// shareStateRequestCode is the code of a share-partition named by
// InitializeShareGroupState or DeleteShareGroupState before it is changed: 0 to
// change it. known tells whether its topic id is known.
func (s *Server) shareStateRequestCode(allowed bool, group string, known bool) int16 {
	switch {
	case !allowed:
		return kerr.ClusterAuthorizationFailed.Code
	case s.cfg.Shares == nil:
		return kerr.CoordinatorNotAvailable.Code
	case group == "":
		return kerr.InvalidRequest.Code
	case !known:
		return kerr.UnknownTopicOrPartition.Code
	}
	return 0
}
