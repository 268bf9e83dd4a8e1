package kafkaapi

// AlterPartitionReassignments, key 45, versions 0..1 (KIP-455; v1 KIP-860).
//
// Behaviour: for each partition named, replicas move the partition to those
// brokers (in that order), and null cancels its reassignment in progress (back to
// the replicas it had). The node records the request in etcd and answers once it
// is recorded; the controller moves the replicas as it drains a broker, adding
// the new replicas first and removing the old ones once the new are in sync
// (cluster/reassignments.go; ListPartitionReassignments shows the progress).
// Per partition: UNKNOWN_TOPIC_OR_PARTITION; INVALID_REPLICA_ASSIGNMENT for an
// empty list, a broker named twice or one that is not live;
// NO_REASSIGNMENT_IN_PROGRESS for a cancel of none; INVALID_REPLICATION_FACTOR
// when v1's allow_replication_factor_change is false and the count changes;
// REQUEST_TIMED_OUT when etcd did not answer in time.
//
// Authorization, as in Kafka: ALTER on the cluster; without it
// CLUSTER_AUTHORIZATION_FAILED for the request and each partition.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/cluster"
)

func init() {
	register(api[*kmsg.AlterPartitionAssignmentsRequest]{
		min: 0, max: 1,
		handle: (*Server).handleAlterPartitionReassignments,
		entries: func(r *kmsg.AlterPartitionAssignmentsRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleAlterPartitionReassignments(c *conn, _ *RequestHeader, req *kmsg.AlterPartitionAssignmentsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	allowed := c.allowedCluster(acl.OpAlter)
	if !allowed {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	}
	ctx, cancel := context.WithTimeout(c.ctx, metadataWriteTimeout)
	defer cancel()
	snap := s.cache.Snapshot()
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case !allowed:
				rp.ErrorCode = resp.ErrorCode
			default:
				rp.ErrorCode, rp.ErrorMessage = s.reassign(ctx, snap, req, t.Topic, p)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// reassign records one partition's reassignment (or its cancel) and returns
// its error code and message.
func (s *Server) reassign(ctx context.Context, snap *cluster.Snapshot, req *kmsg.AlterPartitionAssignmentsRequest, topic string, p kmsg.AlterPartitionAssignmentsRequestTopicPartition) (int16, *string) {
	t, ok := snap.Topic(topic)
	if !ok || p.Partition < 0 || int(p.Partition) >= len(t.Assignment) {
		return kerr.UnknownTopicOrPartition.Code, nil
	}
	if req.Version >= 1 && !req.AllowReplicationFactorChange && p.Replicas != nil && len(p.Replicas) != len(t.Assignment[p.Partition]) {
		msg := "the request does not allow the replication factor to change"
		return kerr.InvalidReplicationFactor.Code, &msg
	}
	err := s.meta.Reassign(ctx, snap, topic, p.Partition, p.Replicas)
	msg := func(e *kerr.Error) (int16, *string) { m := err.Error(); return e.Code, &m }
	switch {
	case err == nil:
		return 0, nil
	case errors.Is(err, cluster.ErrInvalidReplicaAssignment):
		return msg(kerr.InvalidReplicaAssignment)
	case errors.Is(err, cluster.ErrNoReassignment):
		return msg(kerr.NoReassignmentInProgress)
	case errors.Is(err, cluster.ErrUnknownTopic), errors.Is(err, cluster.ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code, nil
	case errors.Is(err, cluster.ErrStalePartitionEpoch):
		return msg(kerr.ReassignmentInProgress) // another request for it was recorded meanwhile
	}
	return msg(kerr.RequestTimedOut)
}
