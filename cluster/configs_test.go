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
	for _, spec := range topicConfigs {
		got, ok := LookupTopicConfig(spec.Name)
		if !ok || got.Name != spec.Name {
			t.Fatalf("lookup %s", spec.Name)
		}
		def, _ := DefaultTopicConfig(spec.Name, 1)
		if err := spec.Validate(def); err != nil {
			t.Errorf("default of %s does not validate: %v", spec.Name, err)
		}
		if spec.Type == ConfigTypeUnknown || spec.BrokerName == "" || spec.Doc == "" {
			t.Errorf("%s: incomplete spec", spec.Name)
		}
	}
	if _, ok := LookupTopicConfig("flush.messages"); ok {
		t.Fatal("flush.messages is known")
	}
}

func TestValidateTopicConfigs(t *testing.T) {
	good := map[string]string{
		ConfigRetentionMs: "-1", ConfigRetentionBytes: "1073741824", ConfigSegmentBytes: "14",
		ConfigSegmentMs: "1", ConfigMaxMessageBytes: "0", ConfigMinInsyncReplicas: "2",
		ConfigCleanupPolicy: "delete", ConfigCompressionType: "producer", ConfigFlushPolicy: "interval",
		ConfigFlushMs: "250", ConfigMessageTimestampType: "CreateTime", ConfigUncleanLeaderElect: "TRUE",
		ConfigIndexIntervalBytes: "4096", ConfigMinCleanableRatio: "0.01", ConfigMinCompactionLagMs: "0",
		ConfigMaxCompactionLagMs: "1", ConfigDeleteRetentionMs: "0",
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
	for _, c := range []struct{ name, value string }{
		{"flush.messages", "1"},
		{ConfigRetentionMs, "-2"},
		{ConfigRetentionMs, "1h"},
		{ConfigSegmentBytes, "13"},
		{ConfigSegmentBytes, "4294967296"}, // beyond int32
		{ConfigSegmentMs, "0"},
		{ConfigMinInsyncReplicas, "0"},
		{ConfigCleanupPolicy, "compacted"},
		{ConfigCleanupPolicy, "compact,compact"},
		{ConfigCleanupPolicy, ""},
		{ConfigMinCleanableRatio, "1.5"},
		{ConfigMinCleanableRatio, "half"},
		{ConfigMaxCompactionLagMs, "0"},
		{ConfigDeleteRetentionMs, "-1"},
		{ConfigCompressionType, "zstd"},
		{ConfigMessageTimestampType, "NowTime"},
		{ConfigFlushPolicy, "sometimes"},
		{ConfigUncleanLeaderElect, "yes"},
		{ConfigMaxMessageBytes, ""},
	} {
		err := ValidateTopicConfigs(map[string]string{ConfigRetentionMs: "1000", c.name: c.value})
		var ce *ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s=%q: %v", c.name, c.value, err)
			continue
		}
		if ce.Name != c.name || ce.Value != c.value || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s=%q: error names %s=%q: %v", c.name, c.value, ce.Name, ce.Value, err)
		}
	}
}

func TestDescribeTopicConfigs(t *testing.T) {
	tp := Topic{Name: "t", ReplicationFactor: 3, Configs: map[string]string{ConfigRetentionMs: "5"}}
	broker := map[string]string{ConfigSegmentBytes: "1048576"}
	entries := DescribeTopicConfigs(tp, broker)
	if len(entries) != len(topicConfigs) {
		t.Fatalf("%d entries", len(entries))
	}
	byName := map[string]ConfigEntry{}
	for _, e := range entries {
		byName[e.Name] = e
		if e.Sensitive {
			t.Errorf("%s sensitive", e.Name)
		}
	}
	check := func(name, value string, src ConfigSource, isDefault bool) {
		t.Helper()
		e := byName[name]
		if e.Value != value || e.Source != src || e.IsDefault != isDefault {
			t.Errorf("%s: %+v, want %s from %d default=%v", name, e, value, src, isDefault)
		}
	}
	check(ConfigRetentionMs, "5", SourceTopic, false)
	check(ConfigSegmentBytes, "1048576", SourceStaticBroker, true)
	check(ConfigMaxMessageBytes, "1048588", SourceDefault, true)
	check(ConfigFlushPolicy, FlushReplicated, SourceDefault, true)
	if byName[ConfigRetentionMs].Type != ConfigTypeLong || byName[ConfigUncleanLeaderElect].Type != ConfigTypeBoolean {
		t.Error("types")
	}
	// A single-replica topic syncs before acknowledging by default.
	tp.ReplicationFactor = 1
	if v := EffectiveTopicConfig(tp, nil, ConfigFlushPolicy); v != FlushAlways {
		t.Errorf("flush.policy for RF 1: %s", v)
	}
	if v := EffectiveTopicConfig(tp, broker, ConfigSegmentBytes); v != "1048576" {
		t.Errorf("segment.bytes: %s", v)
	}
	if v := EffectiveTopicConfig(tp, broker, ConfigRetentionMs); v != "5" {
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
