package appliance

import (
	"math"
	"net"
	"slices"
	"strconv"
	"time"

	"skiff/cluster"
	"skiff/compaction"
	"skiff/kafkaapi"
	"skiff/logstore"
	"skiff/replication"
)

// applyLoop applies every new metadata snapshot to the local partitions until Close.
func (n *Node) applyLoop(snap *cluster.Snapshot) {
	defer close(n.applyEnd)
	for {
		select {
		case <-snap.Changed():
		case <-n.stop:
			return
		}
		snap = n.cache.Snapshot()
		if err := n.applyMetadata(snap); err != nil {
			n.logger.Error("applying cluster metadata to local partitions", "revision", snap.Revision(), "err", err)
		}
	}
}

// applyMetadata opens, reconfigures and deletes local partitions so that they match
// the replicas snap assigns to this node.
func (n *Node) applyMetadata(snap *cluster.Snapshot) error {
	var specs []replication.TopicSpec
	for _, t := range snap.Topics() {
		spec := replication.TopicSpec{Name: t.Name, ID: t.ID}
		for p, replicas := range t.Assignment {
			if !slices.Contains(replicas, n.id) {
				continue
			}
			ps := replication.PartitionSpec{ID: int32(p), Leader: cluster.NoLeader, Replicas: replicas}
			if st, ok := snap.Partition(t.Name, int32(p)); ok {
				ps.Leader, ps.LeaderEpoch, ps.ISR, ps.PartitionEpoch = st.Leader, st.LeaderEpoch, st.ISR, st.PartitionEpoch
				ps.LeaderBrokerEpoch = st.EpochOf(st.Leader)
			}
			spec.Partitions = append(spec.Partitions, ps)
		}
		if len(spec.Partitions) > 0 {
			spec.Config = n.partitionConfig(t)
			specs = append(specs, spec)
		}
	}
	err := n.parts.Apply(snap.Revision(), specs)
	n.applyGroups(snap)
	n.noticeDeletedTopics(snap)
	return err
}

// partitionConfig resolves a topic's effective configs into partition settings.
func (n *Node) partitionConfig(t cluster.Topic) replication.PartitionConfig {
	defaults := n.topicDefaults()
	get := func(name string) int64 {
		v, _ := strconv.ParseInt(cluster.EffectiveTopicConfig(t, defaults, name), 10, 64)
		return v
	}
	flush, err := replication.ParseFlushPolicy(cluster.EffectiveTopicConfig(t, defaults, cluster.ConfigFlushPolicy))
	if err != nil { // validated when set; a value from a newer version: the safest
		flush = replication.FlushAlways
	}
	compact, del := cluster.CleanupPolicies(cluster.EffectiveTopicConfig(t, defaults, cluster.ConfigCleanupPolicy))
	retentionMs, retentionBytes := get(cluster.ConfigRetentionMs), get(cluster.ConfigRetentionBytes)
	if !del { // compact only: the cleaner, not retention, bounds the log
		retentionMs, retentionBytes = -1, -1
	}
	ms := func(name string) time.Duration { return time.Duration(get(name)) * time.Millisecond }
	cc := compaction.Config{Compact: compact, MinLag: ms(cluster.ConfigMinCompactionLagMs),
		DeleteRetention: ms(cluster.ConfigDeleteRetentionMs), SegmentBytes: get(cluster.ConfigSegmentBytes)}
	cc.MinCleanableRatio, _ = strconv.ParseFloat(cluster.EffectiveTopicConfig(t, defaults, cluster.ConfigMinCleanableRatio), 64)
	if lag := get(cluster.ConfigMaxCompactionLagMs); lag < math.MaxInt64/int64(time.Millisecond) {
		cc.MaxLag = time.Duration(lag) * time.Millisecond
	}
	segmentMs := get(cluster.ConfigSegmentMs)
	if compact && cc.MaxLag > 0 {
		// The active segment rolls in time to be compacted within the maximum lag
		// (Kafka's LogConfig.maxSegmentMs).
		segmentMs = min(segmentMs, cc.MaxLag.Milliseconds())
	}
	return replication.PartitionConfig{
		Flush:         flush,
		FlushInterval: time.Duration(get(cluster.ConfigFlushMs)) * time.Millisecond,
		Log: logstore.Config{
			SegmentBytes:       get(cluster.ConfigSegmentBytes),
			SegmentMs:          segmentMs,
			RetentionMs:        retentionMs,
			RetentionBytes:     retentionBytes,
			IndexIntervalBytes: get(cluster.ConfigIndexIntervalBytes),
			Logger:             n.logger.With("topic", t.Name),
		},
		Compaction:        cc,
		MaxMessageBytes:   int(get(cluster.ConfigMaxMessageBytes)),
		MinInsyncReplicas: int(get(cluster.ConfigMinInsyncReplicas)),
		LogAppendTime:     cluster.EffectiveTopicConfig(t, nil, cluster.ConfigMessageTimestampType) == "LogAppendTime",
	}
}

// topicDefaults are the broker-level defaults of topic configs (keyed by topic
// config name) that this node's settings give: flush.policy and flush.ms.
func (n *Node) topicDefaults() map[string]string {
	d := map[string]string{}
	if n.cfg.FlushPolicy != "" {
		d[cluster.ConfigFlushPolicy] = n.cfg.FlushPolicy
	}
	if n.cfg.FlushInterval != defaultFlushInterval {
		d[cluster.ConfigFlushMs] = strconv.FormatInt(n.cfg.FlushInterval.Milliseconds(), 10)
	}
	return d
}

// brokerConfigs are the settings DescribeConfigs reports for this broker: its id,
// and every setting with a Kafka name (settings.go).
func (n *Node) brokerConfigs() []kafkaapi.BrokerConfig {
	out := []kafkaapi.BrokerConfig{{Name: "broker.id", Value: strconv.Itoa(int(n.id)), Type: cluster.ConfigTypeInt, ReadOnly: true}}
	for _, s := range n.cfg.Settings() {
		if s.Kafka == "" || s.Unlisted {
			continue
		}
		out = append(out, kafkaapi.BrokerConfig{Name: s.Kafka, Value: s.v.kafka(s.Kafka), Type: s.KafkaType,
			IsDefault: s.v.isDefault(), ReadOnly: !s.Dynamic})
	}
	return out
}

// brokerAddr is the advertised address of a live broker's inter-broker listener
// (the one named like this node's), for followers.
func (n *Node) brokerAddr(id int32) (string, bool) {
	if n.cache == nil {
		return "", false
	}
	b, ok := n.cache.Broker(id)
	if !ok {
		return "", false
	}
	host, port, ok := b.Address(n.listeners[n.interBroker].name)
	if !ok {
		return "", false
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port))), true
}
