package cluster

import (
	"context"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// CreatePartitions grows topic name to count partitions (Kafka's CreatePartitions)
// and returns the topic as written and the write's revision.
//
// It reads the topic and calls assign with it to get the replica lists of the new
// partitions, t.Partitions..count-1 in order (each with the topic's replication
// factor, preferred leader first). The topic key (with the new count and assignment)
// and the new partitions' state keys are written in one transaction guarded by the
// topic key's mod revision, so a concurrent change of the topic (another
// CreatePartitions, new configs, a delete and re-create) is never overwritten: the
// topic is read again and assign called again. New partitions start like
// CreateTopic's: leader = first replica, leader epoch 0, ISR = the replicas,
// partition epoch 0.
//
// Errors: ErrUnknownTopic; ErrInvalidPartitions if count is not above the current
// count or above MaxPartitions; ErrInvalidReplicaAssignment if assign returns the
// wrong number of lists or a list that is not rf distinct non-negative ids; an error
// of assign is returned as it is.
func (s *Store) CreatePartitions(ctx context.Context, name string, count int32, assign func(t Topic) ([][]int32, error)) (Topic, int64, error) {
	if err := ValidTopicName(name); err != nil {
		return Topic{}, 0, err
	}
	key := topicKey(name)
	epochs, err := s.brokerEpochs(ctx)
	if err != nil {
		return Topic{}, 0, err
	}
	for {
		resp, err := s.client.Get(ctx, key)
		if err != nil {
			return Topic{}, 0, fmt.Errorf("cluster: read topic %s: %w", name, err)
		}
		if len(resp.Kvs) == 0 {
			return Topic{}, 0, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
		}
		kv := resp.Kvs[0]
		cur, err := decodeTopic(key, kv.Value)
		if err != nil {
			return Topic{}, 0, err
		}
		if err := CheckPartitionCount(cur, count); err != nil {
			return cur, 0, err
		}
		added, err := assign(cur)
		if err != nil {
			return cur, 0, err
		}
		if want := int(count - cur.Partitions); len(added) != want {
			return cur, 0, fmt.Errorf("%w: %d replica lists for the %d new partitions of %s", ErrInvalidReplicaAssignment, len(added), want, name)
		}
		next := cur
		next.Partitions = count
		next.Assignment = append(slices.Clip(slices.Clone(cur.Assignment)), added...)
		if err := validateTopic(next, int(cur.Partitions)); err != nil {
			return cur, 0, err
		}
		ops := make([]clientv3.Op, 0, 1+len(added))
		ops = append(ops, clientv3.OpPut(key, encodeTopic(next)))
		for i, replicas := range added {
			st := PartitionState{Leader: replicas[0]}.WithISR(replicas, epochs)
			ops = append(ops, clientv3.OpPut(partitionKey(name, cur.Partitions+int32(i)), encodePartition(st)))
		}
		tr, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
			Then(ops...).
			Commit()
		if err != nil {
			return cur, 0, fmt.Errorf("cluster: create partitions of %s: %w", name, err)
		}
		if tr.Succeeded {
			s.logger.Info("created partitions", "topic", name, "partitions", count, "added", len(added))
			return next, tr.Header.Revision, nil
		}
	}
}

// CheckPartitionCount reports whether topic t may grow to count partitions: more than
// it has, at most MaxPartitions. The error wraps ErrInvalidPartitions.
func CheckPartitionCount(t Topic, count int32) error {
	switch {
	case count == t.Partitions:
		return fmt.Errorf("%w: topic %s already has %d partitions", ErrInvalidPartitions, t.Name, count)
	case count < t.Partitions:
		return fmt.Errorf("%w: topic %s has %d partitions, more than the %d asked for; partitions cannot be removed", ErrInvalidPartitions, t.Name, t.Partitions, count)
	case count > MaxPartitions:
		return fmt.Errorf("%w: %d partitions for topic %s; at most %d", ErrInvalidPartitions, count, t.Name, MaxPartitions)
	}
	return nil
}
