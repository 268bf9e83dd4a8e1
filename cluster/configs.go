package cluster

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// ConfigType is the type of a config as DescribeConfigs (v3+) reports it;
// the values are Kafka's.
type ConfigType int8

// Kafka's config types.
const (
	ConfigTypeUnknown  ConfigType = 0
	ConfigTypeBoolean  ConfigType = 1
	ConfigTypeString   ConfigType = 2
	ConfigTypeInt      ConfigType = 3
	ConfigTypeShort    ConfigType = 4
	ConfigTypeLong     ConfigType = 5
	ConfigTypeDouble   ConfigType = 6
	ConfigTypeList     ConfigType = 7
	ConfigTypeClass    ConfigType = 8
	ConfigTypePassword ConfigType = 9
)

// ConfigSource says where a config value comes from; the values are Kafka's
// DescribeConfigs config_source.
type ConfigSource int8

// Kafka's config sources used by Skiff.
const (
	// SourceTopic: a topic-level override (Kafka DYNAMIC_TOPIC_CONFIG).
	SourceTopic ConfigSource = 1
	// SourceStaticBroker: the broker's configuration file or flags.
	SourceStaticBroker ConfigSource = 4
	// SourceDefault: the built-in default.
	SourceDefault ConfigSource = 5
)

// Topic config names Skiff knows. Any other name is refused.
const (
	ConfigCleanupPolicy        = "cleanup.policy"
	ConfigCompressionType      = "compression.type"
	ConfigDeleteRetentionMs    = "delete.retention.ms"
	ConfigFlushMs              = "flush.ms"
	ConfigFlushPolicy          = "flush.policy"
	ConfigIndexIntervalBytes   = "index.interval.bytes"
	ConfigMaxCompactionLagMs   = "max.compaction.lag.ms"
	ConfigMaxMessageBytes      = "max.message.bytes"
	ConfigMessageTimestampType = "message.timestamp.type"
	ConfigMinCleanableRatio    = "min.cleanable.dirty.ratio"
	ConfigMinCompactionLagMs   = "min.compaction.lag.ms"
	ConfigMinInsyncReplicas    = "min.insync.replicas"
	ConfigRetentionBytes       = "retention.bytes"
	ConfigRetentionMs          = "retention.ms"
	ConfigSegmentBytes         = "segment.bytes"
	ConfigSegmentMs            = "segment.ms"
	ConfigUncleanLeaderElect   = "unclean.leader.election.enable"
)

// Values of flush.policy (see ARCHITECTURE.md, Durability).
const (
	FlushReplicated = "replicated" // acknowledged once in the page cache of every in-sync replica
	FlushAlways     = "always"     // fdatasync before acknowledging (group commit)
	FlushInterval   = "interval"   // fdatasync every flush.ms
)

// Values of cleanup.policy: a list of one or both.
const (
	CleanupDelete  = "delete"  // retention deletes old segments
	CleanupCompact = "compact" // the log cleaner keeps the latest record of each key
)

// CleanupPolicies returns the policies of a cleanup.policy value (validated).
func CleanupPolicies(v string) (compact, del bool) {
	for _, p := range strings.Split(v, ",") {
		switch strings.TrimSpace(p) {
		case CleanupCompact:
			compact = true
		case CleanupDelete:
			del = true
		}
	}
	return compact, del
}

// DefaultFlushMs is the built-in default of flush.ms, which the broker setting
// flush-interval (log.flush.interval.ms) also defaults to.
const DefaultFlushMs = 1000

// ConfigSpec describes one topic config.
type ConfigSpec struct {
	Name string
	Type ConfigType
	// Default is the built-in default. flush.policy has none here: its
	// default depends on the replication factor (DefaultTopicConfig).
	Default string
	// BrokerName is the broker-level config that sets the default for all
	// topics (Kafka's synonym), e.g. log.retention.ms for retention.ms.
	BrokerName string
	// ReadOnly configs cannot be changed; Skiff has none today. No topic
	// config is sensitive.
	ReadOnly bool
	Doc      string
	check    func(string) error
}

// Validate checks a value for this config.
func (s ConfigSpec) Validate(v string) error {
	if err := s.check(v); err != nil {
		return &ConfigError{Name: s.Name, Value: v, Reason: err.Error()}
	}
	return nil
}

// ConfigError is a refused config; it wraps ErrInvalidConfig.
type ConfigError struct {
	Name, Value, Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("cluster: invalid topic config %s=%q: %s", e.Name, e.Value, e.Reason)
}

func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

func intRange(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return errors.New("not an integer")
		}
		if n < lo || n > hi {
			if hi == math.MaxInt64 || hi == math.MaxInt32 {
				return fmt.Errorf("must be at least %d", lo)
			}
			return fmt.Errorf("must be between %d and %d", lo, hi)
		}
		return nil
	}
}

func oneOf(allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
}

func floatRange(lo, hi float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return errors.New("not a number")
		}
		if f < lo || f > hi {
			return fmt.Errorf("must be between %g and %g", lo, hi)
		}
		return nil
	}
}

// listOf accepts a comma-separated, non-empty list of distinct allowed values.
func listOf(allowed ...string) func(string) error {
	one := oneOf(allowed...)
	return func(v string) error {
		seen := map[string]bool{}
		for _, item := range strings.Split(v, ",") {
			item = strings.TrimSpace(item)
			if err := one(item); err != nil {
				return fmt.Errorf("every item %s", err)
			}
			if seen[item] {
				return fmt.Errorf("%s is listed twice", item)
			}
			seen[item] = true
		}
		return nil
	}
}

func boolean(v string) error {
	if strings.EqualFold(v, "true") || strings.EqualFold(v, "false") {
		return nil
	}
	return errors.New("must be true or false")
}

// topicConfigs is the table of known topic configs, sorted by name. Value
// sets are Kafka's, narrowed to what Skiff implements: a value whose effect
// Skiff does not provide is refused rather than silently ignored.
var topicConfigs = []ConfigSpec{
	{Name: ConfigCleanupPolicy, Type: ConfigTypeList, Default: CleanupDelete, BrokerName: "log.cleanup.policy",
		Doc:   "delete: old segments are removed by retention. compact: the log cleaner keeps the latest record of every key (docs/compaction.md). compact,delete: both.",
		check: listOf(CleanupCompact, CleanupDelete)},
	{Name: ConfigCompressionType, Type: ConfigTypeString, Default: "producer", BrokerName: "compression.type",
		Doc:   "producer: batches are kept as the producer compressed them. Skiff stores batches unchanged, so recompression to another codec is refused.",
		check: oneOf("producer")},
	{Name: ConfigDeleteRetentionMs, Type: ConfigTypeLong, Default: "86400000", BrokerName: "log.cleaner.delete.retention.ms",
		Doc:   "How long a tombstone of a compacted topic is kept after the cleaner first kept it, for consumers to see the delete.",
		check: intRange(0, math.MaxInt64)},
	{Name: ConfigFlushMs, Type: ConfigTypeLong, Default: strconv.Itoa(DefaultFlushMs), BrokerName: "log.flush.interval.ms",
		Doc:   "Milliseconds between fdatasyncs under flush.policy=interval.",
		check: intRange(0, math.MaxInt64)},
	{Name: ConfigFlushPolicy, Type: ConfigTypeString, BrokerName: "flush.policy",
		Doc:   "When an acknowledged batch is durable: replicated (page cache of every in-sync replica; default when replication.factor > 1), always (fdatasync before acknowledging; default when replication.factor = 1), interval (fdatasync every flush.ms).",
		check: oneOf(FlushReplicated, FlushAlways, FlushInterval)},
	{Name: ConfigIndexIntervalBytes, Type: ConfigTypeInt, Default: "4096", BrokerName: "log.index.interval.bytes",
		Doc:   "Bytes of log between two offset index entries.",
		check: intRange(0, math.MaxInt32)},
	{Name: ConfigMaxCompactionLagMs, Type: ConfigTypeLong, Default: strconv.FormatInt(math.MaxInt64, 10), BrokerName: "log.cleaner.max.compaction.lag.ms",
		Doc:   "Longest time a record of a compacted topic stays uncompacted: a log whose oldest uncompacted record is older is compacted whatever its dirty ratio (its active segment rolls by then too).",
		check: intRange(1, math.MaxInt64)},
	{Name: ConfigMaxMessageBytes, Type: ConfigTypeInt, Default: "1048588", BrokerName: "message.max.bytes",
		Doc:   "Largest record batch accepted, in bytes.",
		check: intRange(0, math.MaxInt32)},
	{Name: ConfigMessageTimestampType, Type: ConfigTypeString, Default: "CreateTime", BrokerName: "log.message.timestamp.type",
		Doc:   "CreateTime: the producer's timestamps are kept. LogAppendTime: the broker sets each batch's maxTimestamp to the append time and marks the batch so (the batch CRC is recomputed; records keep their deltas, which consumers ignore for LogAppendTime batches).",
		check: oneOf("CreateTime", "LogAppendTime")},
	{Name: ConfigMinCleanableRatio, Type: ConfigTypeDouble, Default: "0.5", BrokerName: "log.cleaner.min.cleanable.ratio",
		Doc:   "Share of a compacted log's compactable bytes not yet compacted at which the cleaner compacts it.",
		check: floatRange(0, 1)},
	{Name: ConfigMinCompactionLagMs, Type: ConfigTypeLong, Default: "0", BrokerName: "log.cleaner.min.compaction.lag.ms",
		Doc:   "Shortest time a record of a compacted topic stays uncompacted (by batch timestamp).",
		check: intRange(0, math.MaxInt64)},
	{Name: ConfigMinInsyncReplicas, Type: ConfigTypeInt, Default: "1", BrokerName: "min.insync.replicas",
		Doc:   "Fewest in-sync replicas for an acks=all produce to succeed.",
		check: intRange(1, math.MaxInt32)},
	{Name: ConfigRetentionBytes, Type: ConfigTypeLong, Default: "-1", BrokerName: "log.retention.bytes",
		Doc:   "Largest size of a partition before old segments are deleted; -1: no limit.",
		check: intRange(-1, math.MaxInt64)},
	{Name: ConfigRetentionMs, Type: ConfigTypeLong, Default: "604800000", BrokerName: "log.retention.ms",
		Doc:   "Age after which segments are deleted; -1: no limit.",
		check: intRange(-1, math.MaxInt64)},
	{Name: ConfigSegmentBytes, Type: ConfigTypeInt, Default: "1073741824", BrokerName: "log.segment.bytes",
		Doc:   "Segment file size at which a new segment is started.",
		check: intRange(14, math.MaxInt32)},
	{Name: ConfigSegmentMs, Type: ConfigTypeLong, Default: "604800000", BrokerName: "log.roll.ms",
		Doc:   "Age at which a new segment is started.",
		check: intRange(1, math.MaxInt64)},
	{Name: ConfigUncleanLeaderElect, Type: ConfigTypeBoolean, Default: "false", BrokerName: "unclean.leader.election.enable",
		Doc:   "Whether a replica outside the ISR may become leader (losing data) when no ISR member is left.",
		check: boolean},
}

// TopicConfigSpecs returns the known topic configs, sorted by name.
func TopicConfigSpecs() []ConfigSpec {
	return append([]ConfigSpec(nil), topicConfigs...)
}

// LookupTopicConfig returns the spec of a topic config.
func LookupTopicConfig(name string) (ConfigSpec, bool) {
	i := sort.Search(len(topicConfigs), func(i int) bool { return topicConfigs[i].Name >= name })
	if i < len(topicConfigs) && topicConfigs[i].Name == name {
		return topicConfigs[i], true
	}
	return ConfigSpec{}, false
}

// ValidateTopicConfigs checks topic-level overrides (for CreateTopics and
// AlterConfigs) or broker-level defaults keyed by topic config name. Unknown
// names are refused. The error is a *ConfigError naming the first bad
// name/value in name order, and wraps ErrInvalidConfig.
func ValidateTopicConfigs(configs map[string]string) error {
	names := make([]string, 0, len(configs))
	for k := range configs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		spec, ok := LookupTopicConfig(k)
		if !ok {
			return &ConfigError{Name: k, Value: configs[k], Reason: "unknown topic config"}
		}
		if err := spec.Validate(configs[k]); err != nil {
			return err
		}
	}
	return nil
}

// DefaultTopicConfig returns the built-in default of a topic config for a
// topic with replication factor rf.
func DefaultTopicConfig(name string, rf int16) (string, bool) {
	if name == ConfigFlushPolicy {
		if rf > 1 {
			return FlushReplicated, true
		}
		return FlushAlways, true
	}
	spec, ok := LookupTopicConfig(name)
	return spec.Default, ok
}

// ConfigEntry is one resolved topic config, as DescribeConfigs reports it.
type ConfigEntry struct {
	Name   string
	Value  string
	Source ConfigSource
	// IsDefault is true unless the topic overrides the config.
	IsDefault bool
	ReadOnly  bool
	Sensitive bool // always false for topic configs
	Type      ConfigType
}

// DescribeTopicConfigs resolves every known topic config of t, sorted by
// name: the topic's override, else an internal topic's own default
// (InternalTopicConfigs), else brokerDefaults (broker-level defaults
// keyed by topic config name, already validated by ValidateTopicConfigs),
// else the built-in default.
func DescribeTopicConfigs(t Topic, brokerDefaults map[string]string) []ConfigEntry {
	out := make([]ConfigEntry, 0, len(topicConfigs))
	for _, spec := range topicConfigs {
		e := ConfigEntry{Name: spec.Name, ReadOnly: spec.ReadOnly, Type: spec.Type}
		if v, ok := t.Configs[spec.Name]; ok {
			e.Value, e.Source = v, SourceTopic
		} else if v, ok := InternalTopicConfigs(t.Name)[spec.Name]; ok {
			e.Value, e.Source, e.IsDefault = v, SourceDefault, true
		} else if v, ok := brokerDefaults[spec.Name]; ok {
			e.Value, e.Source, e.IsDefault = v, SourceStaticBroker, true
		} else {
			e.Value, _ = DefaultTopicConfig(spec.Name, t.ReplicationFactor)
			e.Source, e.IsDefault = SourceDefault, true
		}
		out = append(out, e)
	}
	return out
}

// EffectiveTopicConfig returns the value of one topic config for t, resolved
// like DescribeTopicConfigs; "" for an unknown name.
func EffectiveTopicConfig(t Topic, brokerDefaults map[string]string, name string) string {
	if v, ok := t.Configs[name]; ok {
		return v
	}
	if v, ok := InternalTopicConfigs(t.Name)[name]; ok {
		return v
	}
	if v, ok := brokerDefaults[name]; ok {
		return v
	}
	v, _ := DefaultTopicConfig(name, t.ReplicationFactor)
	return v
}
