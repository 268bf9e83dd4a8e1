package cluster

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestTopicConfigTableSorted(t *testing.T) {
	// LookupTopicConfig binary-searches the table.
	if !slices.IsSortedFunc(topicConfigs, func(a, b ConfigSpec) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatal("topicConfigs is not sorted by name")
	}
	brokerNames := map[string]bool{}
	for _, spec := range topicConfigs {
		got, ok := LookupTopicConfig(spec.Name)
		if !ok || got.Name != spec.Name {
			t.Fatalf("lookup %s", spec.Name)
		}
		if spec.internal {
			continue
		}
		def, _ := DefaultTopicConfig(spec.Name, 1)
		if err := spec.Validate(def); err != nil {
			t.Errorf("default of %s does not validate: %v", spec.Name, err)
		}
		if spec.Type == ConfigTypeUnknown || spec.Doc == "" {
			t.Errorf("%s: incomplete spec", spec.Name)
		}
		if b := spec.BrokerName; b != "" {
			if brokerNames[b] {
				t.Errorf("%s: broker name %s used twice", spec.Name, b)
			}
			brokerNames[b] = true
			if back, ok := LookupTopicDefault(b); !ok || back.Name != spec.Name {
				t.Errorf("LookupTopicDefault(%s) = %s", b, back.Name)
			}
		}
	}
	for _, s := range TopicConfigSpecs() {
		if s.internal {
			t.Errorf("%s is listed", s.Name)
		}
	}
	if _, ok := LookupTopicConfig("no.such.config"); ok {
		t.Fatal("no.such.config is known")
	}
}

// kafkaTopicConfigs are the names of Kafka 4.x's topic configs (LogConfig).
var kafkaTopicConfigs = []string{
	"cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type",
	"compression.zstd.level", "delete.retention.ms", "file.delete.delay.ms", "flush.messages", "flush.ms",
	"follower.replication.throttled.replicas", "index.interval.bytes", "leader.replication.throttled.replicas",
	"local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms", "max.message.bytes",
	"message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "message.timestamp.type",
	"min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas", "preallocate",
	"remote.log.copy.disable", "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes",
	"retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
	"unclean.leader.election.enable",
}

func TestEveryKafkaTopicConfigKnown(t *testing.T) {
	for _, name := range kafkaTopicConfigs {
		spec, ok := LookupTopicConfig(name)
		if !ok || spec.internal {
			t.Errorf("%s: not a listed topic config", name)
		}
	}
}

func TestValidateTopicConfigs(t *testing.T) {
	good := map[string]string{
		ConfigRetentionMs: "-1", ConfigRetentionBytes: "-5", ConfigSegmentBytes: "1048576",
		ConfigSegmentMs: "1", ConfigMaxMessageBytes: "0", ConfigMinInsyncReplicas: " 2 ",
		ConfigCleanupPolicy: "delete", ConfigCompressionType: "zstd", ConfigFlushPolicy: "interval",
		ConfigFlushMs: "250", ConfigMessageTimestampType: "CreateTime", ConfigUncleanLeaderElect: "TRUE",
		ConfigIndexIntervalBytes: "0", ConfigFlushMessages: "1", ConfigCompressionGzipLevel: "-1",
		ConfigCompressionLz4Level: "17", ConfigCompressionZstdLevel: "-131072", ConfigMinCleanableRatio: "1",
		ConfigLeaderThrottledReplicas: "0:1, 1:2", ConfigFollowerThrottledReplicas: "*", ConfigRemoteStorageEnable: "false",
		ConfigLocalRetentionMs: "-2", ConfigInternalSegmentBytes: "300", ConfigMessageDownconversionEnable: "false",
		ConfigMinCompactionLagMs: "0", ConfigMaxCompactionLagMs: "1", ConfigDeleteRetentionMs: "0",
	}
	if err := ValidateTopicConfigs(good); err != nil {
		t.Fatal(err)
	}
	for _, policy := range []string{"compact", "compact,delete", "delete, compact"} {
		if err := ValidateTopicConfigs(map[string]string{ConfigCleanupPolicy: policy}); err != nil {
			t.Errorf("cleanup.policy=%s: %v", policy, err)
		}
	}
	if err := ValidateTopicConfigs(nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, value, msg string }{
		{"no.such.config", "1", "Unknown topic config name: no.such.config"},
		{ConfigRetentionMs, "-2", "Invalid value -2 for configuration retention.ms: Value must be at least -1"},
		{ConfigRetentionMs, "1h", "Invalid value 1h for configuration retention.ms: Not a number of type LONG"},
		{ConfigSegmentBytes, "1048575", "Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576"},
		{ConfigSegmentBytes, "4294967296", "Not a number of type INT"}, // beyond int32
		{ConfigSegmentMs, "0", "Value must be at least 1"},
		{ConfigMinInsyncReplicas, "0", "Value must be at least 1"},
		{ConfigCleanupPolicy, "compacted", "String must be one of: compact, delete"},
		{ConfigMaxCompactionLagMs, "0", "Value must be at least 1"},
		{ConfigDeleteRetentionMs, "-1", "Value must be at least 0"},
		{ConfigCompressionType, "brotli", "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{ConfigCompressionGzipLevel, "0", "Value must be between 1 and 9 or equal to -1"},
		{ConfigCompressionLz4Level, "18", "Value must be no more than 17"},
		{ConfigCompressionZstdLevel, "-131073", "Value must be no less than -131072"},
		{ConfigMinCleanableRatio, "1.5", "Value must be no more than 1"},
		{ConfigMinCleanableRatio, "half", "Not a number of type DOUBLE"},
		{ConfigMessageTimestampType, "NowTime", "String must be one of: CreateTime, LogAppendTime"},
		{ConfigFlushPolicy, "sometimes", "String must be one of"},
		{ConfigUncleanLeaderElect, "yes", "Expected value to be either true or false"},
		{ConfigMaxMessageBytes, "", "Not a number of type INT"},
		{ConfigFlushMessages, "0", "Value must be at least 1"},
		{ConfigLeaderThrottledReplicas, "0-1", "must be the literal '*'"},
		{ConfigRemoteStorageEnable, "true", "Tiered Storage functionality is disabled in the broker"},
		{ConfigLocalRetentionBytes, "-3", "Value must be at least -2"},
	} {
		err := ValidateTopicConfigs(map[string]string{ConfigRetentionMs: "1000", c.name: c.value})
		var ce *ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s=%q: %v", c.name, c.value, err)
			continue
		}
		if ce.Name != c.name || ce.Value != c.value || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s=%q: error names %s=%q: %v, want %q", c.name, c.value, ce.Name, ce.Value, err, c.msg)
		}
	}
}

func TestDescribeTopicConfigs(t *testing.T) {
	tp := Topic{Name: "t", ReplicationFactor: 3, Configs: map[string]string{ConfigRetentionMs: "5", ConfigInternalSegmentBytes: "300"}}
	d := BrokerDefaults{
		Broker:  map[string]string{"log.retention.ms": "7", "log.roll.ms": "8"},
		Cluster: map[string]string{"log.roll.ms": "9", "log.segment.bytes": "2097152", "min.insync.replicas": "2"},
		Static:  map[string]string{"log.segment.bytes": "1048576", "flush.policy": "interval"},
	}
	entries := DescribeTopicConfigs(tp, d)
	if len(entries) != len(topicConfigs)-1 {
		t.Fatalf("%d entries", len(entries))
	}
	byName := map[string]ConfigEntry{}
	for _, e := range entries {
		byName[e.Name] = e
		if e.Sensitive || e.Doc == "" || len(e.Synonyms) == 0 || e.Synonyms[0].Value != e.Value || e.Synonyms[0].Source != e.Source {
			t.Errorf("%s: %+v", e.Name, e)
		}
	}
	if _, ok := byName[ConfigInternalSegmentBytes]; ok {
		t.Error("the internal config is listed")
	}
	check := func(name, value string, src ConfigSource, isDefault bool, synonyms int) {
		t.Helper()
		e := byName[name]
		if e.Value != value || e.Source != src || e.IsDefault != isDefault || len(e.Synonyms) != synonyms {
			t.Errorf("%s: %+v, want %s from %d default=%v with %d synonyms", name, e, value, src, isDefault, synonyms)
		}
	}
	check(ConfigRetentionMs, "5", SourceTopic, false, 3)
	check(ConfigSegmentMs, "8", SourceDynamicBroker, true, 3)
	check(ConfigSegmentBytes, "2097152", SourceDynamicDefaultBroker, true, 3)
	check(ConfigMinInsyncReplicas, "2", SourceDynamicDefaultBroker, true, 2)
	check(ConfigFlushPolicy, FlushInterval, SourceStaticBroker, true, 2)
	check(ConfigMaxMessageBytes, "1048588", SourceDefault, true, 1)
	check(ConfigLeaderThrottledReplicas, "", SourceDefault, true, 1)
	if s := byName[ConfigSegmentMs].Synonyms; s[1] != (ConfigSynonym{"log.roll.ms", "9", SourceDynamicDefaultBroker}) || s[2] != (ConfigSynonym{"log.roll.ms", "604800000", SourceDefault}) {
		t.Errorf("segment.ms synonyms %+v", s)
	}
	if byName[ConfigRetentionMs].Type != ConfigTypeLong || byName[ConfigUncleanLeaderElect].Type != ConfigTypeBoolean {
		t.Error("types")
	}
	// A single-replica topic syncs before acknowledging by default.
	tp.ReplicationFactor = 1
	if v := EffectiveTopicConfig(tp, BrokerDefaults{}, ConfigFlushPolicy); v != FlushAlways {
		t.Errorf("flush.policy for RF 1: %s", v)
	}
	if v := EffectiveTopicConfig(tp, d, ConfigSegmentBytes); v != "2097152" {
		t.Errorf("segment.bytes: %s", v)
	}
	if v := EffectiveTopicConfig(tp, d, ConfigRetentionMs); v != "5" {
		t.Errorf("retention.ms: %s", v)
	}
}

func TestValidTopicName(t *testing.T) {
	for _, ok := range []string{"a", "orders", "my_topic-1.v2", "__consumer_offsets", strings.Repeat("x", 249), "..."} {
		if err := ValidTopicName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", strings.Repeat("x", 250), "a/b", "a b", "ü", "a\x00", "a:b"} {
		if err := ValidTopicName(bad); !errors.Is(err, ErrInvalidTopicName) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestKeys(t *testing.T) {
	for _, c := range []struct {
		key   string
		kind  keyKind
		topic string
		p     int32
	}{
		{keyCluster, keyIsCluster, "", 0},
		{brokerKey(12), keyIsBroker, "", 12},
		{topicKey("a.b"), keyIsTopic, "a.b", 0},
		{partitionKey("a.b", 7), keyIsPartition, "a.b", 7},
		{keyProducerIDs, keyOther, "", 0},
		{prefixController + "x", keyIsCandidate, "", 0},
		{prefixPartitions + "a/-1", keyOther, "", 0},
		{prefixBrokers + "x", keyOther, "", 0},
	} {
		kind, topic, p := parseKey(c.key)
		if kind != c.kind || topic != c.topic || p != c.p {
			t.Errorf("parseKey(%s) = %v %q %d", c.key, kind, topic, p)
		}
	}
	u := NewUUID()
	s := FormatUUID(u)
	if len(s) != 22 || s[0] == '-' {
		t.Fatalf("FormatUUID = %q", s)
	}
	if back, err := ParseUUID(s); err != nil || back != u {
		t.Fatalf("ParseUUID: %v %v", back, err)
	}
	if _, err := ParseUUID("short"); err == nil {
		t.Fatal("ParseUUID accepted a bad id")
	}
	// Values from a newer Skiff are refused, not misread.
	if _, err := decodeTopic(topicKey("t"), []byte(`{"version":2}`)); !errors.Is(err, ErrUnsupportedFormat) {
		t.Fatalf("newer value: %v", err)
	}
	if _, err := decodePartition(partitionKey("t", 0), []byte(`{`)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("garbage: %v", err)
	}
}
