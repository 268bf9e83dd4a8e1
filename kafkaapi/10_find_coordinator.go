package kafkaapi

// FindCoordinator, key 10, versions 0..2.
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
// While the partition has no live leader the answer is COORDINATOR_NOT_AVAILABLE,
// and the client asks again; so it is while this node's view of the cluster may be
// stale (as in Metadata), and when it would name itself but does not lead the
// partition. Error messages are given from v1.
//
// Authorization, as in Kafka: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or on
// the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), checked before the
// first FindCoordinator creates its internal topic.
//
// Not implemented: batched keys (v4+); other key types get INVALID_REQUEST.

import (
	"context"
	"errors"
	"strconv"

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
		min: 0, max: 2,
		handle: (*Server).handleFindCoordinator,
	})
}

func (s *Server) handleFindCoordinator(c *conn, _ *RequestHeader, req *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	resp.NodeID, resp.Port = -1, -1
	fail := func(code *kerr.Error, msg string) kmsg.Response {
		resp.ErrorCode = code.Code
		if req.Version >= 1 {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	topic, partitions, rf := cluster.OffsetsTopic, s.cfg.OffsetsTopicPartitions, s.cfg.OffsetsTopicReplicationFactor
	configs := internalTopicConfigs(cluster.OffsetsTopic)
	switch req.CoordinatorType {
	case 0:
		if !c.allowed(acl.OpDescribe, acl.ResourceGroup, req.CoordinatorKey) {
			return fail(kerr.GroupAuthorizationFailed, kerr.GroupAuthorizationFailed.Description)
		}
	case 1:
		if s.cfg.Txn == nil || !c.allowed(acl.OpDescribe, acl.ResourceTransactionalID, req.CoordinatorKey) {
			return fail(kerr.TransactionalIDAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed.Description)
		}
		topic, partitions, rf = cluster.TransactionTopic, s.cfg.TxnTopicPartitions, s.cfg.TxnTopicReplicationFactor
		configs = internalTopicConfigs(cluster.TransactionTopic)
	default:
		return fail(kerr.InvalidRequest, "unknown coordinator key type "+strconv.Itoa(int(req.CoordinatorType)))
	}
	if !s.viewCurrent(c) {
		return fail(kerr.CoordinatorNotAvailable, "this broker's view of the cluster is not current")
	}
	t, ok := s.cache.Topic(topic)
	if !ok {
		ctx, cancel := context.WithTimeout(c.ctx, metadataWriteTimeout)
		defer cancel()
		var err error
		if t, err = s.createInternalTopic(ctx, topic, partitions, rf, configs); err != nil {
			c.logger.Warn("create "+topic, "err", err)
			return fail(kerr.CoordinatorNotAvailable, "the internal topic "+topic+" is being created: "+err.Error())
		}
	}
	p := groups.PartitionFor(req.CoordinatorKey, t.Partitions)
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
	resp.NodeID, resp.Host, resp.Port = b.ID, host, port
	return resp
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
