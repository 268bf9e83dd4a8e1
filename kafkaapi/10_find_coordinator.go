package kafkaapi

// FindCoordinator, key 10, versions 0..6 (v3+ flexible, v4+ batched keys).
//
// Behaviour: for a group (key type 0, the only one of v0), the coordinator is the
// leader of __consumer_offsets partition abs(key.hashCode()) % partitions, Kafka's
// choice (groups.PartitionFor); for a transactional id (key type 1) the leader of
// that partition of __transaction_state. The first FindCoordinator of a type
// creates its topic, as Kafka does: offsets.topic.num.partitions (or
// transaction.state.log.num.partitions) partitions, replication factor
// offsets.topic.replication.factor (transaction.state.log.replication.factor) capped
// at the live brokers, segment.bytes 100 MiB (Kafka's offsets.topic.segment.bytes),
// compacted (cleanup.policy=compact). Creating them on first use rather than at
// node start lets every broker of a new cluster register first, so the replicas
// spread.
// A creation that fails answers every key of the request needing that topic with
// COORDINATOR_NOT_AVAILABLE: it is tried once per request, not once per key.
// While the partition has no live leader the answer is COORDINATOR_NOT_AVAILABLE,
// and the client asks again; so it is while this node's view of the cluster may be
// stale (as in Metadata), and when it would name itself but does not lead the
// partition. Error messages are given from v1.
//
// Authorization, as in Kafka: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or on
// the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), checked before the
// first FindCoordinator creates its internal topic.
//
// Key type 2 (share, KIP-932, v6+; INVALID_REQUEST before, as in Kafka): the key
// is "groupId:topicId:partition" (INVALID_REQUEST, Kafka's message, when it is
// not) and the coordinator is the leader of the partition of __share_group_state
// that holds that share-partition's state (sharegroup.StatePartition), the topic
// created on first use like the others; CLUSTER_ACTION on the cluster is needed
// (CLUSTER_AUTHORIZATION_FAILED), as in Kafka. v4+ answers each key in its own
// entry. Other key types get INVALID_REQUEST.

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/cluster"
	"skiff/groups"
	"skiff/sharegroup"
)

// offsetsTopicSegmentBytes is Kafka's offsets.topic.segment.bytes default.
const offsetsTopicSegmentBytes = 100 << 20

func init() {
	register(api[*kmsg.FindCoordinatorRequest]{
		min: 0, max: 6,
		handle:  (*Server).handleFindCoordinator,
		entries: func(r *kmsg.FindCoordinatorRequest) int { return len(r.CoordinatorKeys) },
	})
}

func (s *Server) handleFindCoordinator(c *conn, _ *RequestHeader, req *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	tried := topicCreations{}
	if req.Version < 4 {
		co := s.findCoordinator(c, tried, req.Version, req.CoordinatorType, req.CoordinatorKey)
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = co.ErrorCode, co.NodeID, co.Host, co.Port
		if req.Version >= 1 {
			resp.ErrorMessage = co.ErrorMessage
		}
		return resp
	}
	for _, key := range req.CoordinatorKeys {
		resp.Coordinators = append(resp.Coordinators, s.findCoordinator(c, tried, req.Version, req.CoordinatorType, key))
	}
	return resp
}

// findCoordinator answers for one key of type keyType; tried holds the request's
// failed creations of internal topics.
func (s *Server) findCoordinator(c *conn, tried topicCreations, version int16, keyType int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	co := kmsg.NewFindCoordinatorResponseCoordinator()
	co.Key, co.NodeID, co.Port = key, -1, -1
	fail := func(code *kerr.Error, msg string) kmsg.FindCoordinatorResponseCoordinator {
		co.ErrorCode, co.ErrorMessage = code.Code, &msg
		return co
	}
	topic, partitions, rf := cluster.OffsetsTopic, s.cfg.OffsetsTopicPartitions, s.cfg.OffsetsTopicReplicationFactor
	configs := internalTopicConfigs(cluster.OffsetsTopic)
	partitionFor := func(n int32) int32 { return groups.PartitionFor(key, n) }
	switch keyType {
	case 0:
		if !c.allowed(acl.OpDescribe, acl.ResourceGroup, key) {
			return fail(kerr.GroupAuthorizationFailed, kerr.GroupAuthorizationFailed.Description)
		}
	case 1:
		if s.cfg.Txn == nil || !c.allowed(acl.OpDescribe, acl.ResourceTransactionalID, key) {
			return fail(kerr.TransactionalIDAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed.Description)
		}
		topic, partitions, rf = cluster.TransactionTopic, s.cfg.TxnTopicPartitions, s.cfg.TxnTopicReplicationFactor
		configs = internalTopicConfigs(cluster.TransactionTopic)
	case 2:
		switch {
		case version < 6:
			return fail(kerr.InvalidRequest, "share coordinator keys need FindCoordinator v6 or later")
		case s.cfg.Shares == nil:
			return fail(kerr.InvalidRequest, "share groups are not served")
		case !c.allowedCluster(acl.OpClusterAction):
			return fail(kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed.Description)
		}
		sk, err := parseShareCoordinatorKey(key)
		if err != nil {
			return fail(kerr.InvalidRequest, err.Error())
		}
		topic, partitions, rf = sharegroup.StateTopic, shareStateTopicPartitions, s.cfg.OffsetsTopicReplicationFactor
		configs = internalTopicConfigs(sharegroup.StateTopic)
		partitionFor = func(n int32) int32 { return sharegroup.StatePartition(sk, n) }
	default:
		return fail(kerr.InvalidRequest, "unknown coordinator key type "+strconv.Itoa(int(keyType)))
	}
	if !s.viewCurrent(c) {
		return fail(kerr.CoordinatorNotAvailable, "this broker's view of the cluster is not current")
	}
	t, ok := s.cache.Topic(topic)
	if !ok {
		var err error
		t, err = tried.create(topic, func() (cluster.Topic, error) {
			ctx, cancel := context.WithTimeout(c.ctx, metadataWriteTimeout)
			defer cancel()
			t, err := s.createInternalTopic(ctx, topic, partitions, rf, configs)
			if err != nil {
				c.logger.Warn("create "+topic, "err", err)
			}
			return t, err
		})
		if err != nil {
			return fail(kerr.CoordinatorNotAvailable, "the internal topic "+topic+" is being created: "+err.Error())
		}
	}
	p := partitionFor(t.Partitions)
	st, ok := s.cache.Partition(topic, p)
	if !ok || st.Leader == cluster.NoLeader || !s.nameable(topic, p, st.Leader) {
		return fail(kerr.CoordinatorNotAvailable, "partition "+strconv.Itoa(int(p))+" of "+topic+" has no leader")
	}
	b, ok := s.cache.Broker(st.Leader)
	if !ok {
		return fail(kerr.CoordinatorNotAvailable, "the leader of partition "+strconv.Itoa(int(p))+" of "+topic+" is not live")
	}
	host, port, ok := b.Address(c.listener.Name)
	if !ok {
		return fail(kerr.CoordinatorNotAvailable, "the coordinator has no listener "+c.listener.Name)
	}
	co.NodeID, co.Host, co.Port = b.ID, host, port
	return co
}

// topicCreations are the internal topics one request failed to create: the
// request's other keys needing the same topic are answered at once rather than
// each waiting up to metadataWriteTimeout again.
type topicCreations map[string]error

// create calls fn unless the creation of topic failed before in this request.
func (tc topicCreations) create(topic string, fn func() (cluster.Topic, error)) (cluster.Topic, error) {
	if err, failed := tc[topic]; failed {
		return cluster.Topic{}, err
	}
	t, err := fn()
	if err != nil {
		tc[topic] = err
	}
	return t, err
}

// parseShareCoordinatorKey reads a share coordinator key, KIP-932's
// "groupId:topicId:partition" (the topic id in Kafka's base64 form).
func parseShareCoordinatorKey(key string) (sharegroup.Key, error) {
	bad := errors.New("Invalid key format: expected - groupId:topicId:partition, found - " + key)
	parts := strings.Split(key, ":")
	if len(parts) != 3 || parts[0] == "" {
		return sharegroup.Key{}, bad
	}
	id, err := cluster.ParseUUID(parts[1])
	if err != nil {
		return sharegroup.Key{}, bad
	}
	p, err := strconv.ParseInt(parts[2], 10, 32)
	if err != nil || p < 0 {
		return sharegroup.Key{}, bad
	}
	return sharegroup.Key{Group: parts[0], TopicID: id, Partition: int32(p)}, nil
}

// internalTopicConfigs are the configs an internal topic is created with:
// compacted, as in Kafka, in smaller segments than other topics.
func internalTopicConfigs(name string) map[string]string {
	c := cluster.InternalTopicConfigs(name)
	c[cluster.ConfigSegmentBytes] = strconv.Itoa(offsetsTopicSegmentBytes)
	return c
}

// createInternalTopic creates an internal topic and waits until this node serves
// it. A concurrent creation by another request or broker is no error.
func (s *Server) createInternalTopic(ctx context.Context, name string, partitions int32, replication int16, configs map[string]string) (cluster.Topic, error) {
	snap := s.cache.Snapshot()
	brokers := snap.Brokers()
	if len(brokers) == 0 {
		return cluster.Topic{}, errors.New("no live broker")
	}
	rf := min(replication, int16(len(brokers)))
	t := cluster.Topic{
		Name:              name,
		ID:                cluster.NewUUID(),
		Partitions:        partitions,
		ReplicationFactor: rf,
		Configs:           configs,
	}
	var err error
	if t.Assignment, err = cluster.PlaceReplicas(brokers, snap.Load(), t.Partitions, rf); err != nil {
		return t, err
	}
	rev, err := s.meta.CreateTopic(ctx, t)
	if errors.Is(err, cluster.ErrTopicExists) {
		if err := s.cache.WaitRevision(ctx, s.cache.Revision()); err != nil {
			return t, err
		}
	} else if err != nil {
		return t, err
	} else {
		s.logger.Info("created an internal topic", "topic", name, "partitions", t.Partitions, "replication_factor", rf)
		if err := s.waitApplied(ctx, rev); err != nil {
			return t, err
		}
	}
	got, ok := s.cache.Topic(name)
	if !ok {
		return t, errors.New("not in the metadata cache yet")
	}
	return got, nil
}

// shareStateTopicPartitions is share.coordinator.state.topic.num.partitions,
// Kafka's default.
const shareStateTopicPartitions = 50

// EnsureShareStateTopic creates the share groups' state topic (package sharegroup)
// unless it exists, compacted, with the replication factor of __consumer_offsets.
func (s *Server) EnsureShareStateTopic(ctx context.Context) error {
	if _, ok := s.cache.Topic(sharegroup.StateTopic); ok {
		return nil
	}
	_, err := s.createInternalTopic(ctx, sharegroup.StateTopic, shareStateTopicPartitions,
		s.cfg.OffsetsTopicReplicationFactor, internalTopicConfigs(sharegroup.StateTopic))
	return err
}
