package kafkaapi

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/cluster"
)

// topicRequest is a topic to create, from CreateTopics or Metadata auto-creation.
// partitions and replicationFactor -1 take the broker defaults.
type topicRequest struct {
	name              string
	partitions        int32
	replicationFactor int16
	assignment        [][]int32 // explicit replica assignment, or nil
	configs           map[string]string
	validateOnly      bool
}

// kafkaError pairs a Kafka error code with a message for the client (CreateTopics
// v1+ carries error messages).
type kafkaError struct {
	code *kerr.Error
	msg  string
}

func (e *kafkaError) Error() string { return e.msg }
func (e *kafkaError) Unwrap() error { return e.code }

func newKafkaError(code *kerr.Error, format string, args ...any) error {
	return &kafkaError{code: code, msg: fmt.Sprintf(format, args...)}
}

// createTopic validates r, places its replicas, writes it to the cluster metadata and
// waits until this node serves its partitions (read-your-writes for the client).
func (s *Server) createTopic(ctx context.Context, r topicRequest) (cluster.Topic, error) {
	if err := cluster.ValidTopicName(r.name); err != nil {
		return cluster.Topic{}, newKafkaError(kerr.InvalidTopicException, "%v", err)
	}
	if cluster.IsInternalTopic(r.name) {
		return cluster.Topic{}, newKafkaError(kerr.InvalidRequest, "topic %q is internal and cannot be created by clients", r.name)
	}
	brokers := s.cache.Brokers()
	ids := make([]int32, 0, len(brokers))
	for _, b := range brokers {
		ids = append(ids, b.ID)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })

	t := cluster.Topic{Name: r.name, ID: cluster.NewUUID(), Configs: r.configs}
	if len(r.assignment) > 0 {
		if r.partitions != -1 || r.replicationFactor != -1 {
			return t, newKafkaError(kerr.InvalidRequest, "give either a replica assignment or num_partitions/replication_factor, not both")
		}
		live := make(map[int32]bool, len(ids))
		for _, id := range ids {
			live[id] = true
		}
		for p, replicas := range r.assignment {
			if len(replicas) == 0 || len(replicas) != len(r.assignment[0]) {
				return t, newKafkaError(kerr.InvalidReplicaAssignment, "partition %d has %d replicas; every partition needs the same number, at least one", p, len(replicas))
			}
			seen := make(map[int32]bool, len(replicas))
			for _, b := range replicas {
				if !live[b] || seen[b] {
					return t, newKafkaError(kerr.InvalidReplicaAssignment, "partition %d: broker %d is unknown or listed twice", p, b)
				}
				seen[b] = true
			}
		}
		t.Assignment = r.assignment
		t.Partitions = int32(len(r.assignment))
		t.ReplicationFactor = int16(len(r.assignment[0]))
	} else {
		t.Partitions, t.ReplicationFactor = r.partitions, r.replicationFactor
		if t.Partitions == -1 {
			t.Partitions = s.cfg.DefaultPartitions
		}
		if t.ReplicationFactor == -1 {
			t.ReplicationFactor = s.cfg.DefaultReplicationFactor
		}
		if t.Partitions <= 0 || t.Partitions > cluster.MaxPartitions {
			return t, newKafkaError(kerr.InvalidPartitions, "number of partitions %d must be between 1 and %d", t.Partitions, cluster.MaxPartitions)
		}
		if t.ReplicationFactor <= 0 {
			return t, newKafkaError(kerr.InvalidReplicationFactor, "replication factor %d must be at least 1", t.ReplicationFactor)
		}
		if int(t.ReplicationFactor) > len(ids) {
			return t, newKafkaError(kerr.InvalidReplicationFactor, "replication factor %d is larger than the %d live brokers", t.ReplicationFactor, len(ids))
		}
		t.Assignment = placeReplicas(ids, t.Partitions, t.ReplicationFactor)
	}
	if err := cluster.ValidateTopicConfigs(r.configs); err != nil {
		return t, newKafkaError(kerr.InvalidConfig, "%v", err)
	}
	if r.validateOnly {
		if _, ok := s.cache.Topic(r.name); ok {
			return t, newKafkaError(kerr.TopicAlreadyExists, "topic %q already exists", r.name)
		}
		return t, nil
	}
	rev, err := s.meta.CreateTopic(ctx, t)
	if errors.Is(err, cluster.ErrTopicExists) {
		return t, newKafkaError(kerr.TopicAlreadyExists, "topic %q already exists", r.name)
	}
	if err != nil {
		return t, metadataWriteError("create topic "+strconv.Quote(r.name), err)
	}
	if err := s.waitApplied(ctx, rev); err != nil {
		return t, newKafkaError(kerr.RequestTimedOut, "topic %q was created but is not served yet: %v", r.name, err)
	}
	return t, nil
}

// waitApplied waits until the metadata cache and the local partitions reflect
// metadata revision rev.
func (s *Server) waitApplied(ctx context.Context, rev int64) error {
	if err := s.cache.WaitRevision(ctx, rev); err != nil {
		return err
	}
	return s.parts.WaitApplied(ctx, rev)
}

// placeReplicas spreads partitions over brokers: partition p's replicas are the
// brokers from a random start, p places along, so leaders (the first replica) are
// spread evenly and every broker holds about the same number of replicas.
func placeReplicas(brokers []int32, partitions int32, rf int16) [][]int32 {
	start := rand.IntN(len(brokers))
	out := make([][]int32, partitions)
	for p := range out {
		replicas := make([]int32, rf)
		for r := range replicas {
			replicas[r] = brokers[(start+p+r)%len(brokers)]
		}
		out[p] = replicas
	}
	return out
}

// metadataWriteError explains a failed write to the cluster metadata (etcd). A write
// that times out almost always means etcd has no quorum: more than half of the nodes
// are down or cut off, and no metadata can change until enough of them return.
func metadataWriteError(op string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return newKafkaError(kerr.RequestTimedOut, "%s: the cluster metadata (etcd) did not accept the change in time; it has no quorum while more than half of the nodes are down or unreachable", op)
	}
	return newKafkaError(kerr.RequestTimedOut, "%s: writing the cluster metadata failed: %v", op, err)
}
