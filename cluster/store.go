package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Store writes cluster metadata to etcd. It is safe for concurrent use.
// Every method that talks to etcd takes a ctx: cancelling it abandons the
// request (a transaction already applied by etcd stays applied).
type Store struct {
	client *clientv3.Client
	logger *slog.Logger

	pid struct {
		sync.Mutex
		next, end int64 // unhanded ids of the current block: [next, end)
	}
}

// New returns a Store writing through client. logger nil means slog.Default().
func New(client *clientv3.Client, logger *slog.Logger) *Store {
	if logger == nil {
		logger = slog.Default()
	}
	return &Store{client: client, logger: logger}
}

// EnsureCluster returns the cluster id, creating /skiff/cluster with a new
// random id if it does not exist yet (only the first node's create succeeds;
// every other node reads that id). It fails with ErrUnsupportedFormat if the
// cluster was formatted by a newer Skiff.
func (s *Store) EnsureCluster(ctx context.Context) (string, error) {
	id := FormatUUID(NewUUID())
	v := encode(clusterValue{Version: valueVersion, FormatVersion: FormatVersion, ClusterID: id, Created: time.Now().UTC()})
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(keyCluster), "=", 0)).
		Then(clientv3.OpPut(keyCluster, v)).
		Else(clientv3.OpGet(keyCluster)).
		Commit()
	if err != nil {
		return "", fmt.Errorf("cluster: ensure %s: %w", keyCluster, err)
	}
	if resp.Succeeded {
		s.logger.Info("created cluster", "cluster_id", id)
		return id, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		// Deleted between the compare and the get of the same txn: cannot
		// happen, the txn is atomic.
		return "", fmt.Errorf("cluster: %s vanished", keyCluster)
	}
	cv, err := decodeCluster(kvs[0].Value)
	if err != nil {
		return "", err
	}
	return cv.ClusterID, nil
}

// Revision returns etcd's current revision, read with a linearizable request (it
// needs quorum): a cache that reached it has seen every write made before the call.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	resp, err := s.client.Get(ctx, keyCluster, clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("cluster: read the current revision: %w", err)
	}
	return resp.Header.Revision, nil
}

// CreateTopic creates topic t and the state of all its partitions in one
// transaction, and returns its etcd revision. A zero t.ID gets a new random
// id. The first replica of each partition's assignment becomes its leader,
// with leader epoch 0 and the whole replica list as ISR.
//
// Errors: ErrTopicExists if the name is taken; validation errors wrap
// ErrInvalidTopicName, ErrInvalidPartitions, ErrInvalidReplicationFactor,
// ErrInvalidReplicaAssignment or ErrInvalidConfig. Brokers named in the
// assignment are not checked for liveness (the controller will be).
func (s *Store) CreateTopic(ctx context.Context, t Topic) (int64, error) {
	if err := validateTopic(t, 0); err != nil {
		return 0, err
	}
	if t.ID == (UUID{}) {
		t.ID = NewUUID()
	}
	if len(t.Configs) == 0 {
		t.Configs = nil
	}
	epochs, err := s.brokerEpochs(ctx)
	if err != nil {
		return 0, err
	}
	ops := make([]clientv3.Op, 0, 1+len(t.Assignment))
	ops = append(ops, clientv3.OpPut(topicKey(t.Name), encodeTopic(t)))
	for p, replicas := range t.Assignment {
		st := PartitionState{Leader: replicas[0]}.WithISR(replicas, epochs)
		ops = append(ops, clientv3.OpPut(partitionKey(t.Name, int32(p)), encodePartition(st)))
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(topicKey(t.Name)), "=", 0)).
		Then(ops...).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("cluster: create topic %s: %w", t.Name, err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("%w: %s", ErrTopicExists, t.Name)
	}
	s.logger.Info("created topic", "topic", t.Name, "topic_id", FormatUUID(t.ID),
		"partitions", t.Partitions, "replication_factor", t.ReplicationFactor)
	return resp.Header.Revision, nil
}

// Created is the outcome of one topic of CreateTopics: the revision of the
// transaction that wrote it, or why it was not (ErrTopicExists, a validation
// error, or the write's own error).
type Created struct {
	Rev int64
	Err error
}

// createBatchOps bounds the operations of one CreateTopics transaction, well
// under etcd's limit (embedetcd.DefaultMaxTxnOps) and, at about 150 bytes a
// partition, its request size: a request of larger topics takes several
// transactions.
const createBatchOps = 4096

// CreateTopics creates topics as CreateTopic does, with one read of the
// broker epochs and one etcd transaction for up to createBatchOps keys: each
// topic is a nested transaction of its own (created only if its name is
// free), so one topic's error is not another's, while the cluster commits
// them all with one round of raft (one fsync of the log per member) instead
// of one each. The outcomes are in the order of ts.
func (s *Store) CreateTopics(ctx context.Context, ts []Topic) []Created {
	out := make([]Created, len(ts))
	var ops []clientv3.Op
	var at []int // the index in ts of each nested transaction in ops
	size := 0
	commit := func() {
		if len(ops) == 0 {
			return
		}
		resp, err := s.client.Txn(ctx).Then(ops...).Commit()
		for j, i := range at {
			switch {
			case err != nil:
				out[i].Err = fmt.Errorf("cluster: create topic %s: %w", ts[i].Name, err)
			case !resp.Responses[j].GetResponseTxn().GetSucceeded():
				out[i].Err = fmt.Errorf("%w: %s", ErrTopicExists, ts[i].Name)
			default:
				out[i].Rev = resp.Header.Revision
				s.logger.Info("created topic", "topic", ts[i].Name, "topic_id", FormatUUID(ts[i].ID),
					"partitions", ts[i].Partitions, "replication_factor", ts[i].ReplicationFactor)
			}
		}
		ops, at, size = ops[:0], at[:0], 0
	}
	var epochs func(int32) int64
	for i, t := range ts {
		if err := validateTopic(t, 0); err != nil {
			out[i].Err = err
			continue
		}
		if epochs == nil {
			var err error
			if epochs, err = s.brokerEpochs(ctx); err != nil {
				for j := i; j < len(ts); j++ {
					out[j].Err = err
				}
				return out
			}
		}
		if t.ID == (UUID{}) {
			t.ID = NewUUID()
			ts[i].ID = t.ID
		}
		if len(t.Configs) == 0 {
			t.Configs = nil
		}
		puts := make([]clientv3.Op, 0, 1+len(t.Assignment))
		puts = append(puts, clientv3.OpPut(topicKey(t.Name), encodeTopic(t)))
		for p, replicas := range t.Assignment {
			st := PartitionState{Leader: replicas[0]}.WithISR(replicas, epochs)
			puts = append(puts, clientv3.OpPut(partitionKey(t.Name, int32(p)), encodePartition(st)))
		}
		if size > 0 && size+len(puts) > createBatchOps {
			commit()
		}
		ops = append(ops, clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(topicKey(t.Name)), "=", 0)}, puts, nil))
		at = append(at, i)
		size += len(puts)
	}
	commit()
	return out
}

// DeleteTopic removes a topic and all its partition state in one
// transaction and returns its revision; ErrUnknownTopic if there is no such
// topic.
func (s *Store) DeleteTopic(ctx context.Context, name string) (int64, error) {
	if err := ValidTopicName(name); err != nil {
		return 0, err
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(topicKey(name)), ">", 0)).
		Then(clientv3.OpDelete(topicKey(name)), clientv3.OpDelete(partitionPrefix(name), clientv3.WithPrefix())).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("cluster: delete topic %s: %w", name, err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	s.logger.Info("deleted topic", "topic", name)
	return resp.Header.Revision, nil
}

// SetTopicConfigs replaces the topic-level config overrides of a topic
// (configs not named revert to their defaults; nil clears all) and returns
// the write's revision. Errors: ErrUnknownTopic, or a *ConfigError wrapping
// ErrInvalidConfig.
func (s *Store) SetTopicConfigs(ctx context.Context, name string, configs map[string]string) (int64, error) {
	return s.AlterTopicConfigs(ctx, name, func(map[string]string) (map[string]string, error) { return configs, nil })
}

// AlterTopicConfigs changes the topic-level config overrides of a topic to
// what alter returns when given the current ones (a copy it may change), and
// returns the write's revision. The result is validated (a *ConfigError
// wrapping ErrInvalidConfig); an error from alter is returned as it is. The
// write compares the topic key's mod revision with the one read and, after a
// concurrent change, reads and calls alter again, so it never overwrites
// another field of the topic or another change of its configs. Errors also:
// ErrUnknownTopic.
func (s *Store) AlterTopicConfigs(ctx context.Context, name string, alter func(map[string]string) (map[string]string, error)) (int64, error) {
	if err := ValidTopicName(name); err != nil {
		return 0, err
	}
	key := topicKey(name)
	for {
		resp, err := s.client.Get(ctx, key)
		if err != nil {
			return 0, fmt.Errorf("cluster: read topic %s: %w", name, err)
		}
		if len(resp.Kvs) == 0 {
			return 0, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
		}
		kv := resp.Kvs[0]
		t, err := decodeTopic(key, kv.Value)
		if err != nil {
			return 0, err
		}
		configs, err := alter(maps.Clone(t.Configs))
		if err != nil {
			return 0, err
		}
		if err := ValidateTopicConfigs(configs); err != nil {
			return 0, err
		}
		t.Configs = nil
		if len(configs) > 0 {
			t.Configs = maps.Clone(configs)
		}
		tr, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
			Then(clientv3.OpPut(key, encodeTopic(t))).
			Commit()
		if err != nil {
			return 0, fmt.Errorf("cluster: write configs of %s: %w", name, err)
		}
		if tr.Succeeded {
			s.logger.Info("set topic configs", "topic", name, "configs", t.Configs)
			return tr.Header.Revision, nil
		}
	}
}

// checkAlter checks a change of topic/partition from expectedEpoch to next
// against the stored topic (tkvs) and partition (pkvs) and sets next's
// partition epoch; it returns the stored state. The errors are AlterPartition's.
func checkAlter(topic string, partition, expectedEpoch int32, next *PartitionState, tkvs, pkvs []*mvccpb.KeyValue) (PartitionState, error) {
	return checkAlterWith(topic, partition, expectedEpoch, next, tkvs, pkvs, decodeTopic)
}

// checkAlterWith is checkAlter decoding the stored topic with decode, which
// AlterPartitions memoizes: a batch holds many partitions of one topic, and
// decoding its assignment again for each was most of a batch's cost.
func checkAlterWith(topic string, partition, expectedEpoch int32, next *PartitionState, tkvs, pkvs []*mvccpb.KeyValue,
	decode func(key string, value []byte) (Topic, error)) (PartitionState, error) {
	tkey, pkey := topicKey(topic), partitionKey(topic, partition)
	if len(tkvs) == 0 {
		return PartitionState{}, fmt.Errorf("%w: %s", ErrUnknownTopic, topic)
	}
	if len(pkvs) == 0 {
		return PartitionState{}, fmt.Errorf("%w: %s/%d", ErrUnknownPartition, topic, partition)
	}
	t, err := decode(tkey, tkvs[0].Value)
	if err != nil {
		return PartitionState{}, err
	}
	cur, err := decodePartition(pkey, pkvs[0].Value)
	if err != nil {
		return PartitionState{}, err
	}
	if cur.PartitionEpoch != expectedEpoch {
		return cur, fmt.Errorf("%w: %s/%d is at partition epoch %d, not %d",
			ErrStalePartitionEpoch, topic, partition, cur.PartitionEpoch, expectedEpoch)
	}
	if partition >= int32(len(t.Assignment)) {
		return PartitionState{}, fmt.Errorf("%w: %s/%d", ErrUnknownPartition, topic, partition)
	}
	if err := validatePartitionState(*next, cur, t.Assignment[partition]); err != nil {
		return cur, fmt.Errorf("%s/%d: %w", topic, partition, err)
	}
	next.PartitionEpoch = expectedEpoch + 1
	return cur, nil
}

// AlterPartition replaces the state of one partition if its partition epoch
// is still expectedEpoch, and returns the stored state (PartitionEpoch set
// to expectedEpoch+1) and the write's revision. It is the only writer of
// partition state after creation: leaders change their ISR with it, the
// controller moves leadership with it (with a higher LeaderEpoch).
//
// Errors: ErrUnknownTopic / ErrUnknownPartition; ErrStalePartitionEpoch if
// the state moved on (re-read it and decide again); ErrInvalidPartitionState
// if next breaks an invariant (ISR outside the replicas, leader outside the
// ISR, leader epoch going back, or a new leader without a new epoch);
// ErrFenced if a fence compare (the controller's election key) failed.
func (s *Store) AlterPartition(ctx context.Context, topic string, partition int32, expectedEpoch int32, next PartitionState, fence ...clientv3.Cmp) (PartitionState, int64, error) {
	if err := ValidTopicName(topic); err != nil {
		return PartitionState{}, 0, err
	}
	tkey, pkey := topicKey(topic), partitionKey(topic, partition)
	for {
		// Read both keys at one revision.
		resp, err := s.client.Txn(ctx).Then(clientv3.OpGet(tkey), clientv3.OpGet(pkey)).Commit()
		if err != nil {
			return PartitionState{}, 0, fmt.Errorf("cluster: read partition %s/%d: %w", topic, partition, err)
		}
		tkvs := resp.Responses[0].GetResponseRange().Kvs
		pkvs := resp.Responses[1].GetResponseRange().Kvs
		cur, err := checkAlter(topic, partition, expectedEpoch, &next, tkvs, pkvs)
		if err != nil {
			return cur, 0, err
		}
		cmps := append([]clientv3.Cmp{
			clientv3.Compare(clientv3.ModRevision(pkey), "=", pkvs[0].ModRevision),
			clientv3.Compare(clientv3.ModRevision(tkey), "=", tkvs[0].ModRevision),
		}, fence...)
		tr, err := s.client.Txn(ctx).If(cmps...).Then(clientv3.OpPut(pkey, encodePartition(next))).Commit()
		if err != nil {
			return PartitionState{}, 0, fmt.Errorf("cluster: write partition %s/%d: %w", topic, partition, err)
		}
		if tr.Succeeded {
			return next, tr.Header.Revision, nil
		}
		if len(fence) > 0 {
			fr, err := s.client.Txn(ctx).If(fence...).Commit()
			if err != nil {
				return PartitionState{}, 0, fmt.Errorf("cluster: check fence: %w", err)
			}
			if !fr.Succeeded {
				return cur, 0, fmt.Errorf("%w: %s/%d", ErrFenced, topic, partition)
			}
		}
		// Something changed in between: read again; a moved epoch fails above.
	}
}

// brokerEpochs reads the broker epochs of the registered brokers, to stamp the initial
// ISR of new partitions (an unregistered broker: 0, unknown).
func (s *Store) brokerEpochs(ctx context.Context) (func(int32) int64, error) {
	resp, err := s.client.Get(ctx, prefixBrokers, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cluster: read brokers: %w", err)
	}
	m := make(map[int32]int64, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if kind, _, id := parseKey(string(kv.Key)); kind == keyIsBroker {
			if b, err := decodeRegistration(string(kv.Key), kv.Value, kv.CreateRevision); err == nil {
				m[id] = b.Epoch // as the controller's snapshot reads it
			}
		}
	}
	return func(id int32) int64 { return m[id] }, nil
}
