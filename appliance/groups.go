package appliance

// The group coordinator's part of the node: its settings, and which partitions of
// __consumer_offsets it coordinates (those this node leads), kept in step with every
// metadata snapshot applied.

import (
	"strings"
	"time"

	"skiff/cluster"
	"skiff/groups"
	"skiff/kafkaapi"
)

// GroupConfig holds the group coordinator's settings. Zero values take the
// defaults of the settings table (settings.go), which are Kafka's except where
// groups says otherwise.
type GroupConfig struct {
	// MinSessionTimeout and MaxSessionTimeout are group.min.session.timeout.ms and
	// group.max.session.timeout.ms.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms (negative: none).
	InitialRebalanceDelay time.Duration
	// MaxSize is group.max.size (also the bound of KIP-848 consumer groups).
	MaxSize int
	// ConsumerSessionTimeout and ConsumerHeartbeatInterval are
	// group.consumer.session.timeout.ms and group.consumer.heartbeat.interval.ms.
	ConsumerSessionTimeout, ConsumerHeartbeatInterval time.Duration
	// ConsumerMin/MaxSessionTimeout and ConsumerMin/MaxHeartbeatInterval are
	// group.consumer.min/max.session.timeout.ms and
	// group.consumer.min/max.heartbeat.interval.ms: the bounds of a group's own
	// consumer.session.timeout.ms and consumer.heartbeat.interval.ms.
	ConsumerMinSessionTimeout, ConsumerMaxSessionTimeout       time.Duration
	ConsumerMinHeartbeatInterval, ConsumerMaxHeartbeatInterval time.Duration
	// ConsumerAssignors is group.consumer.assignors.
	ConsumerAssignors []string
	// ConsumerMigrationPolicy is group.consumer.migration.policy.
	ConsumerMigrationPolicy string
	// OffsetsRetention is offsets.retention.minutes.
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is offsets.retention.check.interval.ms.
	OffsetsRetentionCheckInterval time.Duration
	// OffsetsTopicPartitions and OffsetsTopicReplicationFactor are
	// offsets.topic.num.partitions and offsets.topic.replication.factor, used when
	// __consumer_offsets is created (the replication factor capped at the live
	// brokers).
	OffsetsTopicPartitions        int32
	OffsetsTopicReplicationFactor int16
	// ShareRecordLockDuration, ShareDeliveryCountLimit and ShareMaxRecordLocks are
	// group.share.record.lock.duration.ms, group.share.delivery.count.limit and
	// group.share.partition.max.record.locks.
	ShareRecordLockDuration time.Duration
	ShareDeliveryCountLimit int16
	ShareMaxRecordLocks     int
	// ShareSessionTimeout and ShareHeartbeatInterval are
	// group.share.session.timeout.ms and group.share.heartbeat.interval.ms;
	// ShareMin/MaxSessionTimeout and ShareMin/MaxHeartbeatInterval
	// (group.share.min/max.*) bound a group's share.session.timeout.ms and
	// share.heartbeat.interval.ms.
	ShareSessionTimeout, ShareHeartbeatInterval          time.Duration
	ShareMinSessionTimeout, ShareMaxSessionTimeout       time.Duration
	ShareMinHeartbeatInterval, ShareMaxHeartbeatInterval time.Duration
}

// startGroups creates the group coordinator; it leads nothing until applyGroups.
func (n *Node) startGroups() {
	c := n.cfg.Groups
	n.groups = groups.New(groups.Config{
		DB: n.db,
		TopicPartitions: func(topic string) (int32, bool) {
			t, ok := n.cache.Topic(topic)
			return t.Partitions, ok
		},
		MinSessionTimeout:     c.MinSessionTimeout,
		MaxSessionTimeout:     c.MaxSessionTimeout,
		InitialRebalanceDelay: c.InitialRebalanceDelay,
		MaxGroupSize:          c.MaxSize,
		Topics: func() []groups.TopicMeta {
			ts := n.cache.Topics()
			out := make([]groups.TopicMeta, len(ts))
			for i, t := range ts {
				out[i] = groups.TopicMeta{Name: t.Name, ID: t.ID, Partitions: t.Partitions}
			}
			return out
		},
		ConsumerSessionTimeout:       c.ConsumerSessionTimeout,
		ConsumerHeartbeatInterval:    c.ConsumerHeartbeatInterval,
		ConsumerMinSessionTimeout:    c.ConsumerMinSessionTimeout,
		ConsumerMaxSessionTimeout:    c.ConsumerMaxSessionTimeout,
		ConsumerMinHeartbeatInterval: c.ConsumerMinHeartbeatInterval,
		ConsumerMaxHeartbeatInterval: c.ConsumerMaxHeartbeatInterval,
		ConsumerAssignors:            c.ConsumerAssignors,
		// The GROUP config resource is kept with the share group configs
		// (startShareGroups runs next, before any group is served).
		GroupConfigs: func(group string) map[string]string {
			if n.shareStore == nil {
				return nil
			}
			return n.shareStore.GroupConfigs(group)
		},
		ConsumerMigrationPolicy: strings.ToLower(c.ConsumerMigrationPolicy), // Kafka's names, any case
		OffsetsRetention:        c.OffsetsRetention,
		RetentionCheckInterval:  c.OffsetsRetentionCheckInterval,
		Logger:                  n.logger,
	})
}

// applyGroups makes the coordinator lead exactly the partitions of
// __consumer_offsets whose leader is this node and whose replica is open here (each
// new leadership or leader epoch reloads that partition's groups from its log), and
// keeps applying the committed records of the partitions it holds as a follower.
func (n *Node) applyGroups(snap *cluster.Snapshot) {
	if n.groups == nil {
		return
	}
	t, ok := snap.Topic(cluster.OffsetsTopic)
	if !ok {
		for _, p := range n.groups.Led() {
			n.groups.Resign(p)
		}
		for p := int32(0); p < n.groups.Followed(); p++ {
			n.groups.Unfollow(p)
		}
		return
	}
	n.groups.SetOffsetsTopic(t.Partitions)
	defer n.watchGroupConfigs(snap)
	for _, p := range n.groups.Led() {
		if p >= t.Partitions {
			n.groups.Resign(p)
		}
	}
	for p := int32(0); p < t.Partitions; p++ {
		part := n.parts.Partition(cluster.OffsetsTopic, p)
		st, ok := snap.Partition(cluster.OffsetsTopic, p)
		switch {
		case part != nil && ok && st.Leader == n.id:
			n.groups.Elect(p, st.LeaderEpoch, part)
		case part != nil:
			// A follower replica: keep Pebble current so an election here serves at once.
			n.groups.Resign(p)
			n.groups.Follow(p, part)
		default:
			n.groups.Resign(p)
			n.groups.Unfollow(p)
		}
	}
}

// noticeDeletedTopics tells the coordinator when a topic of the last snapshot
// applied is gone from snap (or is another topic under its name), so that it
// deletes their committed offsets, as Kafka does.
func (n *Node) noticeDeletedTopics(snap *cluster.Snapshot) {
	topics := snap.Topics()
	now := make(map[string]cluster.UUID, len(topics))
	for _, t := range topics {
		now[t.Name] = t.ID
	}
	deleted := false
	for name, id := range n.appliedTopics {
		if cur, ok := now[name]; !ok || cur != id {
			deleted = true
			break
		}
	}
	n.appliedTopics = now
	if deleted && n.groups != nil {
		n.groups.TopicsDeleted()
	}
}

// groupKafkaConfig adds the coordinator and the offsets topic settings to the Kafka
// server's configuration.
func (n *Node) groupKafkaConfig(k kafkaapi.Config) kafkaapi.Config {
	k.Groups = n.groups
	k.OffsetsTopicPartitions = n.cfg.Groups.OffsetsTopicPartitions
	k.OffsetsTopicReplicationFactor = n.cfg.Groups.OffsetsTopicReplicationFactor
	return k
}
