package kafkaapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// CreateTopic creates a topic as a CreateTopics request would (partitions and
// replicationFactor -1 take the broker defaults), for the web console's write
// action; errors carry Kafka's error codes (errors.As a *kerr.Error).
func (s *Server) CreateTopic(ctx context.Context, name string, partitions int32, replicationFactor int16) error {
	_, err := s.createTopic(ctx, topicRequest{name: name, partitions: partitions, replicationFactor: replicationFactor})
	return err
}

// createTopic validates r, places its replicas, writes it to the cluster metadata and
// waits until this node serves its partitions (read-your-writes for the client).
func (s *Server) createTopic(ctx context.Context, r topicRequest) (cluster.Topic, error) {
	t, err := s.planTopic(r, nil)
	if err != nil || r.validateOnly {
		return t, err
	}
	rev, err := s.meta.CreateTopic(ctx, t)
	if err != nil {
		return t, createError(r.name, err)
	}
	if err := s.waitApplied(ctx, rev); err != nil {
		return t, notServedError(r.name, err)
	}
	return t, nil
}

// notServedError answers a topic written to the cluster metadata that this
// node did not serve before the request's deadline.
func notServedError(name string, err error) error {
	return newKafkaError(kerr.RequestTimedOut, "topic %q was created but is not served yet: %v", name, err)
}

// createError answers a failed write of topic name to the cluster metadata.
func createError(name string, err error) error {
	if errors.Is(err, cluster.ErrTopicExists) {
		return newKafkaError(kerr.TopicAlreadyExists, "topic %q already exists", name)
	}
	return metadataWriteError("create topic "+strconv.Quote(name), err)
}

// planTopic validates r and places its replicas: it returns the topic to write
// to the cluster metadata. For validate_only it also refuses a name the cached
// metadata has. planned lists the topics of the same request planned before
// r, which are not in the metadata yet: the placement counts them in the
// brokers' load, as if they were there.
func (s *Server) planTopic(r topicRequest, planned []cluster.Topic) (cluster.Topic, error) {
	if err := cluster.ValidTopicName(r.name); err != nil {
		return cluster.Topic{}, newKafkaError(kerr.InvalidTopicException, "%v", err)
	}
	if cluster.IsInternalTopic(r.name) {
		return cluster.Topic{}, newKafkaError(kerr.InvalidRequest, "topic %q is internal and cannot be created by clients", r.name)
	}
	snap := s.cache.Snapshot()
	brokers := snap.PlacementBrokers()

	t := cluster.Topic{Name: r.name, ID: cluster.NewUUID(), Configs: r.configs}
	if len(r.assignment) > 0 {
		if r.partitions != -1 || r.replicationFactor != -1 {
			return t, newKafkaError(kerr.InvalidRequest, "give either a replica assignment or num_partitions/replication_factor, not both")
		}
		if err := checkAssignment(snap, r.assignment, len(r.assignment[0]), 0); err != nil {
			return t, err
		}
		t.Assignment = r.assignment
		t.Partitions = int32(len(r.assignment))
		t.ReplicationFactor = int16(len(r.assignment[0]))
	} else {
		t.Partitions, t.ReplicationFactor = r.partitions, r.replicationFactor
		d := s.dynamic()
		if t.Partitions == -1 {
			t.Partitions = d.DefaultPartitions
		}
		if t.ReplicationFactor == -1 {
			t.ReplicationFactor = d.DefaultReplicationFactor
		}
		if t.Partitions <= 0 || t.Partitions > cluster.MaxPartitions {
			return t, newKafkaError(kerr.InvalidPartitions, "number of partitions %d must be between 1 and %d", t.Partitions, cluster.MaxPartitions)
		}
		if t.ReplicationFactor <= 0 {
			return t, newKafkaError(kerr.InvalidReplicationFactor, "replication factor %d must be at least 1", t.ReplicationFactor)
		}
		if int(t.ReplicationFactor) > len(brokers) {
			return t, newKafkaError(kerr.InvalidReplicationFactor, "replication factor %d is larger than the %d live brokers (not counting brokers being drained)", t.ReplicationFactor, len(brokers))
		}
		var err error
		if t.Assignment, err = cluster.PlaceReplicas(brokers, loadWith(snap, planned), t.Partitions, t.ReplicationFactor); err != nil {
			return t, newKafkaError(kerr.InvalidReplicationFactor, "%v", err)
		}
	}
	if err := cluster.ValidateTopicConfigs(r.configs); err != nil {
		return t, newKafkaError(kerr.InvalidConfig, "%v", err)
	}
	if r.validateOnly {
		if _, ok := s.cache.Topic(r.name); ok {
			return t, newKafkaError(kerr.TopicAlreadyExists, "topic %q already exists", r.name)
		}
	}
	return t, nil
}

// loadWith is snap's load of the brokers plus the replicas of the topics in
// planned that snap does not have yet.
func loadWith(snap *cluster.Snapshot, planned []cluster.Topic) map[int32]cluster.BrokerLoad {
	load := snap.Load()
	for _, t := range planned {
		if cur, ok := snap.Topic(t.Name); ok && cur.ID == t.ID {
			continue // counted
		}
		for _, replicas := range t.Assignment {
			for i, b := range replicas {
				l := load[b]
				l.Replicas++
				if i == 0 {
					l.Leaders++
				}
				load[b] = l
			}
		}
	}
	return load
}

// waitApplied waits until the metadata cache and the local partitions reflect
// metadata revision rev.
func (s *Server) waitApplied(ctx context.Context, rev int64) error {
	if err := s.cache.WaitRevision(ctx, rev); err != nil {
		return err
	}
	return s.parts.WaitApplied(ctx, rev)
}

// checkAssignment checks explicit replica lists from a request: each has rf distinct
// live brokers. first is the number of the first partition listed (for messages).
func checkAssignment(snap *cluster.Snapshot, assignment [][]int32, rf int, first int) error {
	for p, replicas := range assignment {
		if len(replicas) == 0 || len(replicas) != rf {
			return newKafkaError(kerr.InvalidReplicaAssignment, "partition %d has %d replicas; every partition needs %d", first+p, len(replicas), max(rf, 1))
		}
		for i, b := range replicas {
			if _, live := snap.Broker(b); !live || slices.Contains(replicas[:i], b) {
				return newKafkaError(kerr.InvalidReplicaAssignment, "partition %d: broker %d is unknown or listed twice", first+p, b)
			}
		}
	}
	return nil
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
