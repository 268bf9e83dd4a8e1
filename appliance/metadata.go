package appliance

import (
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"time"

	"skiff/cluster"
	"skiff/compaction"
	"skiff/internal/compress"
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
	specs := n.applied.build(snap, n.topicDefaults(), n.id, n.topicSpec)
	n.applyDynamic(snap) // before Apply: a request waiting for this revision sees it all applied
	err := n.parts.Apply(snap.Revision(), specs)
	n.applyGroups(snap)
	n.applyTxn(snap)
	n.noticeDeletedTopics(snap)
	return err
}

// topicSpec is the spec of topic t's partitions that have a replica on this node
// in snap, under the broker defaults d; ok is false when none has.
func (n *Node) topicSpec(snap *cluster.Snapshot, t cluster.Topic, d cluster.BrokerDefaults) (spec replication.TopicSpec, ok bool) {
	spec = replication.TopicSpec{Name: t.Name, ID: t.ID}
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
	if len(spec.Partitions) == 0 {
		return spec, false
	}
	spec.Config = n.partitionConfig(t, d)
	return spec, true
}

// appliedSpecs keeps the topic specs applyMetadata built from a snapshot, so
// that the next snapshot builds again only the topics it changed: a restart
// that moves the leadership of 10,000 partitions in batches otherwise built
// all of them again for each batch.
type appliedSpecs struct {
	snap     *cluster.Snapshot
	defaults cluster.BrokerDefaults
	topics   map[string]localTopic
}

// localTopic is one topic's spec, and whether it has partitions here.
type localTopic struct {
	spec  replication.TopicSpec
	local bool
}

// build returns the specs of the topics with partitions here in snap, under
// the broker's static topic defaults static; it calls spec for the topics
// that changed since the last build, or all of them when a broker default
// changed.
func (a *appliedSpecs) build(snap *cluster.Snapshot, static map[string]string, self int32,
	spec func(*cluster.Snapshot, cluster.Topic, cluster.BrokerDefaults) (replication.TopicSpec, bool)) []replication.TopicSpec {
	d := snap.BrokerDefaults(self, static)
	prev := a.snap
	if !maps.Equal(d.Broker, a.defaults.Broker) || !maps.Equal(d.Cluster, a.defaults.Cluster) || !maps.Equal(d.Static, a.defaults.Static) {
		prev = nil // every topic's config may have changed
	}
	topics := make(map[string]localTopic, len(snap.TopicNames()))
	var specs []replication.TopicSpec
	for _, t := range snap.Topics() {
		lt, ok := a.topics[t.Name]
		if !ok || !snap.SameTopic(prev, t.Name) {
			lt.spec, lt.local = spec(snap, t, d)
		}
		topics[t.Name] = lt
		if lt.local {
			specs = append(specs, lt.spec)
		}
	}
	*a = appliedSpecs{snap: snap, defaults: d, topics: topics}
	return specs
}

// partitionConfig resolves a topic's effective configs on this broker, under its
// defaults, into partition settings.
func (n *Node) partitionConfig(t cluster.Topic, defaults cluster.BrokerDefaults) replication.PartitionConfig {
	get := func(name string) int64 { return cluster.ConfigInt(cluster.EffectiveTopicConfig(t, defaults, name)) }
	segmentBytes := get(cluster.ConfigSegmentBytes)
	if v, ok := t.Configs[cluster.ConfigInternalSegmentBytes]; ok {
		segmentBytes = cluster.ConfigInt(v) // tests' small segments, as Kafka's
	}
	compression := cluster.EffectiveTopicConfig(t, defaults, cluster.ConfigCompressionType)
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
		DeleteRetention: ms(cluster.ConfigDeleteRetentionMs), SegmentBytes: segmentBytes}
	if compression != cluster.CompressionProducer {
		cc.LevelCodec = brokerCodecs[compression]
		cc.Level = codecLevel(cc.LevelCodec, get)
	}
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
			SegmentBytes:       segmentBytes,
			SegmentMs:          segmentMs,
			SegmentJitterMs:    get(cluster.ConfigSegmentJitterMs),
			RetentionMs:        retentionMs,
			RetentionBytes:     retentionBytes,
			IndexIntervalBytes: get(cluster.ConfigIndexIntervalBytes),
			Logger:             n.logger.With("topic", t.Name),
		},
		Compaction:                cc,
		FollowerThrottledReplicas: cluster.EffectiveTopicConfig(t, defaults, cluster.ConfigFollowerThrottledReplicas),
		LeaderThrottledReplicas:   cluster.EffectiveTopicConfig(t, defaults, cluster.ConfigLeaderThrottledReplicas),
		MaxMessageBytes:           int(get(cluster.ConfigMaxMessageBytes)),
		MinInsyncReplicas:         int(get(cluster.ConfigMinInsyncReplicas)),
		LogAppendTime:             cluster.EffectiveTopicConfig(t, defaults, cluster.ConfigMessageTimestampType) == "LogAppendTime",
		Recompress:                compression != cluster.CompressionProducer,
		Codec:                     brokerCodecs[compression],
		Level:                     codecLevel(brokerCodecs[compression], get),
		Timestamps: replication.TimestampBounds{Check: true,
			BeforeMs: get(cluster.ConfigMessageTimestampBeforeMaxMs), AfterMs: get(cluster.ConfigMessageTimestampAfterMaxMs)},
	}
}

// brokerCodecs are the codecs of compression.type's values other than producer.
var brokerCodecs = map[string]compress.Codec{
	cluster.CompressionUncompressed: compress.None, "gzip": compress.Gzip, "snappy": compress.Snappy,
	"lz4": compress.LZ4, "zstd": compress.Zstd,
}

// codecLevel is the level codec c compresses at, from the topic's
// compression.<codec>.level (KIP-390) through get; 0 for codecs without levels.
func codecLevel(c compress.Codec, get func(name string) int64) int {
	switch c {
	case compress.Gzip:
		return int(get(cluster.ConfigCompressionGzipLevel))
	case compress.LZ4:
		return int(get(cluster.ConfigCompressionLz4Level))
	case compress.Zstd:
		return int(get(cluster.ConfigCompressionZstdLevel))
	}
	return 0
}

// topicDefaults are the broker-level defaults of topic configs (keyed by broker
// config name) that this node's settings give: flush.policy and
// log.flush.interval.ms.
func (n *Node) topicDefaults() map[string]string {
	d := map[string]string{}
	if n.cfg.FlushPolicy != "" {
		d["flush.policy"] = n.cfg.FlushPolicy
	}
	if n.cfg.FlushInterval != defaultFlushInterval {
		d["log.flush.interval.ms"] = strconv.FormatInt(n.cfg.FlushInterval.Milliseconds(), 10)
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
		bc := kafkaapi.BrokerConfig{Name: s.Kafka, Value: s.v.kafka(s.Kafka), Type: s.KafkaType,
			IsDefault: s.v.isDefault(), ReadOnly: !s.Dynamic, Doc: s.Doc}
		if s.Dynamic {
			bc.Check = s.CheckKafka
		}
		out = append(out, bc)
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
