package kafkaapi

// CreatePartitions, key 37, versions 0..3 (2+ are flexible; 3 is 2 again, KAFKA-14497).
//
// Behaviour: each topic grows to count partitions. The new partitions are placed like
// a new topic's (cluster.PlaceReplicas: rack-aware, leaders spread over the live
// brokers that are not being drained, with the load they already carry) at the topic's replication factor, or
// take the request's assignment: one replica list per new partition, each with the
// topic's replication factor of distinct live brokers (INVALID_REPLICA_ASSIGNMENT
// otherwise). The topic and the new partitions' state are written in one etcd
// transaction guarded by the topic's revision, and the answer waits until this node
// serves the new partitions, or timeout_ms passes (REQUEST_TIMED_OUT: the partitions
// may still be created). validate_only checks everything and writes nothing.
//
// Refusals, per topic with a message: a count not above the current one, or above
// 10,000: INVALID_PARTITIONS; unknown topic: UNKNOWN_TOPIC_OR_PARTITION; more replicas
// than live brokers: INVALID_REPLICATION_FACTOR; a topic twice in one request, or the
// internal __consumer_offsets (groups are mapped to its partitions by hash, so its
// count is fixed): INVALID_REQUEST.
//
// Quota: the partitions added count against the client's controller_mutation_rate
// (mutationQuota; validate_only does not count); from v3 a topic asked for while the
// client is in debt is refused with THROTTLING_QUOTA_EXCEEDED.
//
// Authorization: ALTER on each topic (TOPIC_AUTHORIZATION_FAILED, unchanged), as in
// Kafka.
//
// Not implemented: moving existing partitions (that is partition reassignment).

import (
	"context"
	"errors"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/cluster"
)

func init() {
	register(api[*kmsg.CreatePartitionsRequest]{
		min: 0, max: 3,
		handle: (*Server).handleCreatePartitions,
		entries: func(r *kmsg.CreatePartitionsRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Assignment))
			}
			return n
		},
	})
}

func (s *Server) handleCreatePartitions(c *conn, hdr *RequestHeader, req *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	ctx, cancel := context.WithTimeout(c.ctx, requestTimeout(req.TimeoutMillis))
	defer cancel()
	count := countNames(req.Topics, func(t *kmsg.CreatePartitionsRequestTopic) string { return t.Topic })
	mayAlter := c.allowedTopics(acl.OpAlter)
	mutations := mutationQuota{c: c, hdr: hdr, strict: req.GetVersion() >= 3}
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		var err error
		if count[t.Topic] > 1 {
			err = newKafkaError(kerr.InvalidRequest, "topic %q is listed more than once", t.Topic)
		} else if !mayAlter(t.Topic) {
			err = newKafkaError(kerr.TopicAuthorizationFailed, "The topic authorization is failed.")
		} else {
			var assignment [][]int32
			if t.Assignment != nil {
				assignment = make([][]int32, len(t.Assignment))
				for i, a := range t.Assignment {
					assignment[i] = a.Replicas
				}
			}
			err = s.createPartitions(ctx, t.Topic, t.Count, assignment, req.ValidateOnly, mutations)
		}
		if err != nil {
			rt.ErrorCode = errorCode(err)
			var ke *kafkaError
			if errors.As(err, &ke) {
				msg := ke.msg
				rt.ErrorMessage = &msg
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// createPartitions grows topic to count partitions, placing the new ones unless
// assignment lists their replicas, and waits until this node serves them.
func (s *Server) createPartitions(ctx context.Context, topic string, count int32, assignment [][]int32, validateOnly bool, mutations mutationQuota) error {
	if cluster.ValidTopicName(topic) != nil {
		return newKafkaError(kerr.UnknownTopicOrPartition, "topic %q does not exist", topic)
	}
	if cluster.IsInternalTopic(topic) {
		return newKafkaError(kerr.InvalidRequest, "the partition count of internal topic %q is fixed: consumer groups are mapped to its partitions by hash", topic)
	}
	snap := s.cache.Snapshot()
	var added int32 // by the last try of the transaction
	place := func(cur cluster.Topic) ([][]int32, error) {
		added = count - cur.Partitions
		if assignment != nil {
			if len(assignment) != int(added) {
				return nil, newKafkaError(kerr.InvalidReplicaAssignment, "%d replica lists for the %d new partitions of %q (it has %d, %d asked for)",
					len(assignment), added, topic, cur.Partitions, count)
			}
			if err := checkAssignment(snap, assignment, int(cur.ReplicationFactor), int(cur.Partitions)); err != nil {
				return nil, err
			}
			return assignment, nil
		}
		placed, err := cluster.PlaceReplicas(snap.PlacementBrokers(), snap.Load(), added, cur.ReplicationFactor)
		if err != nil {
			return nil, newKafkaError(kerr.InvalidReplicationFactor, "topic %q has replication factor %d: %v", topic, cur.ReplicationFactor, err)
		}
		return placed, nil
	}
	if validateOnly {
		cur, ok := snap.Topic(topic)
		if !ok {
			return newKafkaError(kerr.UnknownTopicOrPartition, "topic %q does not exist", topic)
		}
		if err := cluster.CheckPartitionCount(cur, count); err != nil {
			return newKafkaError(kerr.InvalidPartitions, "%v", err)
		}
		_, err := place(cur)
		return err
	}
	if _, known := snap.Topic(topic); known {
		if qerr := mutations.admit(); qerr != nil {
			// The request's own error comes before the quota's, as in Kafka.
			if err := s.createPartitions(ctx, topic, count, assignment, true, mutations); err != nil {
				return err
			}
			return qerr
		}
	}
	_, rev, err := s.meta.CreatePartitions(ctx, topic, count, place)
	var ke *kafkaError
	switch {
	case err == nil:
	case errors.As(err, &ke):
		return err
	case errors.Is(err, cluster.ErrUnknownTopic):
		return newKafkaError(kerr.UnknownTopicOrPartition, "topic %q does not exist", topic)
	case errors.Is(err, cluster.ErrInvalidPartitions):
		return newKafkaError(kerr.InvalidPartitions, "%v", err)
	case errors.Is(err, cluster.ErrInvalidReplicaAssignment):
		return newKafkaError(kerr.InvalidReplicaAssignment, "%v", err)
	default:
		return metadataWriteError("create partitions of "+strconv.Quote(topic), err)
	}
	mutations.record(added)
	if err := s.waitApplied(ctx, rev); err != nil {
		return newKafkaError(kerr.RequestTimedOut, "the partitions of %q were created but are not served yet: %v", topic, err)
	}
	return nil
}
