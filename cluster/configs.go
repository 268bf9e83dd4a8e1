package cluster

import (
	"fmt"
	"sort"
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

// String is the type's name as Kafka's documentation writes it.
func (t ConfigType) String() string {
	switch t {
	case ConfigTypeBoolean:
		return "boolean"
	case ConfigTypeString:
		return "string"
	case ConfigTypeInt:
		return "int"
	case ConfigTypeShort:
		return "short"
	case ConfigTypeLong:
		return "long"
	case ConfigTypeDouble:
		return "double"
	case ConfigTypeList:
		return "list"
	case ConfigTypeClass:
		return "class"
	case ConfigTypePassword:
		return "password"
	}
	return "unknown"
}

// ConfigSource says where a config value comes from; the values are Kafka's
// DescribeConfigs config_source.
type ConfigSource int8

// Kafka's config sources used by Skiff.
const (
	// SourceTopic: a topic-level override (Kafka DYNAMIC_TOPIC_CONFIG).
	SourceTopic ConfigSource = 1
	// SourceDynamicBroker: set for one broker at runtime (AlterConfigs on broker
	// "<id>"), kept in etcd.
	SourceDynamicBroker ConfigSource = 2
	// SourceDynamicDefaultBroker: set for every broker at runtime (AlterConfigs on
	// broker ""), kept in etcd.
	SourceDynamicDefaultBroker ConfigSource = 3
	// SourceStaticBroker: the broker's configuration file or flags.
	SourceStaticBroker ConfigSource = 4
	// SourceDefault: the built-in default.
	SourceDefault ConfigSource = 5
)

// ConfigSpec describes one topic config.
type ConfigSpec struct {
	Name string
	Type ConfigType
	// Default is the built-in default. flush.policy has none here: its
	// default depends on the replication factor (DefaultTopicConfig).
	Default string
	// BrokerName is the broker config that sets the default for all topics
	// (Kafka's synonym, the "server default property"), e.g. log.retention.ms
	// for retention.ms; "" where Kafka has none.
	BrokerName string
	// ReadOnly configs cannot be changed; Skiff has none today. No topic
	// config is sensitive.
	ReadOnly bool
	Doc      string
	// NoEffect says why the config changes nothing in Skiff (it is accepted and
	// described, for the tools that set it); "" when Skiff honours it.
	NoEffect string
	// internal configs (Kafka's defineInternal) are accepted but never listed.
	internal bool
	rule
}

// Valid describes the values accepted, as Kafka's documentation does ("[0,...]");
// "" when the type says it all.
func (s ConfigSpec) Valid() string { return s.valid }

// Validate checks a value for this config.
func (s ConfigSpec) Validate(v string) error {
	if err := s.check(v); err != nil {
		return &ConfigError{Name: s.Name, Value: v, Reason: err.Error()}
	}
	return nil
}

// ConfigError is a refused config; it wraps ErrInvalidConfig. Its text is Kafka's
// (a ConfigException's message), which clients show to their users.
type ConfigError struct {
	Name, Value, Reason string
	// Unknown is set for a name that is no config (Reason is then empty).
	Unknown bool
}

func (e *ConfigError) Error() string {
	if e.Unknown {
		return "Unknown topic config name: " + e.Name
	}
	return fmt.Sprintf("Invalid value %s for configuration %s: %s", e.Value, e.Name, e.Reason)
}

func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// TopicConfigSpecs returns the topic configs clients see (internal ones left
// out), sorted by name.
func TopicConfigSpecs() []ConfigSpec {
	out := make([]ConfigSpec, 0, len(topicConfigs))
	for _, s := range topicConfigs {
		if !s.internal {
			out = append(out, s)
		}
	}
	return out
}

// LookupTopicConfig returns the spec of a topic config (internal ones too).
func LookupTopicConfig(name string) (ConfigSpec, bool) {
	i := sort.Search(len(topicConfigs), func(i int) bool { return topicConfigs[i].Name >= name })
	if i < len(topicConfigs) && topicConfigs[i].Name == name {
		return topicConfigs[i], true
	}
	return ConfigSpec{}, false
}

// LookupTopicDefault returns the spec of the topic config whose broker-level
// default brokerName sets (log.retention.ms: retention.ms).
func LookupTopicDefault(brokerName string) (ConfigSpec, bool) {
	for _, s := range topicConfigs {
		if s.BrokerName == brokerName && brokerName != "" {
			return s, true
		}
	}
	return ConfigSpec{}, false
}

// ValidateTopicConfig checks one topic-level override: an unknown name or a bad
// value is a *ConfigError wrapping ErrInvalidConfig.
func ValidateTopicConfig(name, value string) error {
	spec, ok := LookupTopicConfig(name)
	if !ok {
		return &ConfigError{Name: name, Value: value, Unknown: true}
	}
	return spec.Validate(value)
}

// ValidateTopicConfigs checks topic-level overrides (for CreateTopics and
// AlterConfigs). Unknown names are refused. The error is a *ConfigError naming
// the first bad name/value in name order, and wraps ErrInvalidConfig.
func ValidateTopicConfigs(configs map[string]string) error {
	names := make([]string, 0, len(configs))
	for k := range configs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if err := ValidateTopicConfig(k, configs[k]); err != nil {
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

// BrokerDefaults are the broker-level values of topic configs, each layer keyed
// by broker config name (log.retention.ms), in Kafka's order of precedence below
// a topic's own override.
type BrokerDefaults struct {
	// Broker holds the dynamic configs of this broker (DYNAMIC_BROKER_CONFIG).
	Broker map[string]string
	// Cluster holds the dynamic configs of every broker (DYNAMIC_DEFAULT_BROKER_CONFIG).
	Cluster map[string]string
	// Static holds the broker's settings (STATIC_BROKER_CONFIG).
	Static map[string]string
}

// ConfigSynonym is one source of a config's value, as DescribeConfigs (v1+)
// lists them: the one in effect first.
type ConfigSynonym struct {
	Name, Value string
	Source      ConfigSource
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
	Doc       string
	// Synonyms are every value that applies, the one in effect first.
	Synonyms []ConfigSynonym
}

// resolveTopicConfig lists every value of spec that applies to t, the one in
// effect first: the topic's override (else an internal topic's own default,
// InternalTopicConfigs), the broker layers, the built-in default.
func resolveTopicConfig(spec ConfigSpec, t Topic, d BrokerDefaults) []ConfigSynonym {
	var out []ConfigSynonym
	if v, ok := t.Configs[spec.Name]; ok {
		out = append(out, ConfigSynonym{spec.Name, v, SourceTopic})
	} else if v, ok := InternalTopicConfigs(t.Name)[spec.Name]; ok {
		// A broker-owned topic created without it (by an older Skiff).
		out = append(out, ConfigSynonym{spec.Name, v, SourceDefault})
	}
	if spec.BrokerName != "" {
		for _, l := range []struct {
			m   map[string]string
			src ConfigSource
		}{{d.Broker, SourceDynamicBroker}, {d.Cluster, SourceDynamicDefaultBroker}, {d.Static, SourceStaticBroker}} {
			if v, ok := l.m[spec.BrokerName]; ok {
				out = append(out, ConfigSynonym{spec.BrokerName, v, l.src})
			}
		}
	}
	def, _ := DefaultTopicConfig(spec.Name, t.ReplicationFactor)
	name := spec.BrokerName
	if name == "" {
		name = spec.Name
	}
	return append(out, ConfigSynonym{name, def, SourceDefault})
}

// DescribeTopicConfigs resolves every listed topic config of t, sorted by
// name: the topic's override, else the broker layers of d (values already
// validated), else the built-in default.
func DescribeTopicConfigs(t Topic, d BrokerDefaults) []ConfigEntry {
	out := make([]ConfigEntry, 0, len(topicConfigs))
	for _, spec := range topicConfigs {
		if spec.internal {
			continue
		}
		syn := resolveTopicConfig(spec, t, d)
		out = append(out, ConfigEntry{
			Name: spec.Name, Value: syn[0].Value, Source: syn[0].Source, IsDefault: syn[0].Source != SourceTopic,
			ReadOnly: spec.ReadOnly, Type: spec.Type, Doc: spec.Doc, Synonyms: syn,
		})
	}
	return out
}

// DescribeTopicDefaults resolves the broker configs that set topic configs'
// defaults (log.retention.ms, ...), as a broker's DescribeConfigs lists them:
// named by their broker name, each from d's layers, else the built-in default
// (empty for flush.policy, whose default depends on a topic's replication factor).
func DescribeTopicDefaults(d BrokerDefaults) []ConfigEntry {
	var out []ConfigEntry
	for _, spec := range topicConfigs {
		if spec.BrokerName == "" {
			continue
		}
		syn := resolveTopicConfig(spec, Topic{}, d)
		syn[len(syn)-1].Value = spec.Default
		out = append(out, ConfigEntry{
			Name: spec.BrokerName, Value: syn[0].Value, Source: syn[0].Source, IsDefault: syn[0].Source == SourceDefault,
			ReadOnly: spec.ReadOnly, Type: spec.Type, Doc: spec.Doc, Synonyms: syn,
		})
	}
	return out
}

// ValidateTopicDefault checks the value of a broker config that sets a topic
// config's default (log.retention.ms): a *ConfigError naming brokerName; ok is
// false when brokerName sets no topic config's default.
func ValidateTopicDefault(brokerName, value string) (ok bool, err error) {
	spec, ok := LookupTopicDefault(brokerName)
	if !ok {
		return false, nil
	}
	if err := spec.check(value); err != nil {
		return true, &ConfigError{Name: brokerName, Value: value, Reason: err.Error()}
	}
	return true, nil
}

// EffectiveTopicConfig returns the value of one topic config for t, resolved
// like DescribeTopicConfigs and trimmed of spaces, as Kafka parses values; "" for
// an unknown name.
func EffectiveTopicConfig(t Topic, d BrokerDefaults, name string) string {
	spec, ok := LookupTopicConfig(name)
	if !ok {
		return ""
	}
	return strings.TrimSpace(resolveTopicConfig(spec, t, d)[0].Value)
}

// ConfigInt reads the value of a validated INT or LONG config (0 if it is none).
func ConfigInt(v string) int64 {
	n, _ := parseInt(v, 64)
	return n
}

// ConfigBool reads the value of a validated BOOLEAN config (false if it is none).
func ConfigBool(v string) bool {
	b, _ := parseBool(v)
	return b
}

// CleanupPolicies returns the policies of a validated cleanup.policy value.
func CleanupPolicies(v string) (compact, del bool) {
	for _, p := range splitConfigList(v) {
		switch p {
		case CleanupCompact:
			compact = true
		case CleanupDelete:
			del = true
		}
	}
	return compact, del
}
