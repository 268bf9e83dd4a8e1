package kafkaapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicConfig describes one config of a topic (DescribeConfigs v3) and returns its
// value and source.
func topicConfig(t testing.TB, c *kconn, topic, name string) (string, kmsg.ConfigSource) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(3)
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{name}
	req.Resources = append(req.Resources, r)
	resp := c.do(req).(*kmsg.DescribeConfigsResponse)
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 || len(resp.Resources[0].Configs) != 1 {
		t.Fatalf("describe %s of %s: %+v", name, topic, resp.Resources)
	}
	cfg := resp.Resources[0].Configs[0]
	if cfg.Value == nil {
		return "<null>", cfg.Source
	}
	return *cfg.Value, cfg.Source
}

func conformIncrementalAlterConfigs(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, map[string]string{"retention.ms": "3600000"})
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			alter := func(validateOnly bool, cfgs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsResponseResource {
				t.Helper()
				req := kmsg.NewPtrIncrementalAlterConfigsRequest()
				req.SetVersion(v)
				req.ValidateOnly = validateOnly
				r := kmsg.NewIncrementalAlterConfigsRequestResource()
				r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeTopic, topic, cfgs
				req.Resources = append(req.Resources, r)
				resp := c.do(req).(*kmsg.IncrementalAlterConfigsResponse)
				if len(resp.Resources) != 1 || resp.Resources[0].ResourceName != topic || resp.Resources[0].ResourceType != kmsg.ConfigResourceTypeTopic {
					t.Fatalf("answer %+v", resp.Resources)
				}
				return resp.Resources[0]
			}
			op := func(o kmsg.IncrementalAlterConfigOp, name string, value ...string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
				cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				cfg.Name, cfg.Op = name, o
				if len(value) > 0 {
					cfg.Value = kmsg.StringPtr(value[0])
				}
				return cfg
			}
			want := fmt.Sprint(7200000 + int(v))
			wantCode(t, "SET retention.ms", alter(false, op(kmsg.IncrementalAlterConfigOpSet, "retention.ms", want),
				op(kmsg.IncrementalAlterConfigOpDelete, "segment.ms")).ErrorCode, 0)
			if got, src := topicConfig(t, c, topic, "retention.ms"); got != want || src != kmsg.ConfigSourceDynamicTopicConfig {
				t.Errorf("retention.ms = %s from %v, want %s from the topic", got, src, want)
			}
			wantCode(t, "validate_only SET", alter(true, op(kmsg.IncrementalAlterConfigOpSet, "retention.ms", "1")).ErrorCode, 0)
			if got, _ := topicConfig(t, c, topic, "retention.ms"); got != want {
				t.Errorf("validate_only changed retention.ms to %s", got)
			}
			bad := alter(false, op(kmsg.IncrementalAlterConfigOpSet, "retention.ms", "soon"))
			wantCode(t, "bad value", bad.ErrorCode, kerr.InvalidConfig.Code)
			if bad.ErrorMessage == nil || *bad.ErrorMessage != "Invalid value soon for configuration retention.ms: Not a number of type LONG" {
				t.Errorf("bad value message %v", bad.ErrorMessage)
			}
			wantCode(t, "APPEND to a non-list", alter(false, op(kmsg.IncrementalAlterConfigOpAppend, "retention.ms", "1")).ErrorCode, kerr.InvalidConfig.Code)
			wantCode(t, "APPEND to a list", alter(false, op(kmsg.IncrementalAlterConfigOpAppend, "leader.replication.throttled.replicas", "0:1")).ErrorCode, 0)
			if got, _ := topicConfig(t, c, topic, "leader.replication.throttled.replicas"); got != "0:1" {
				t.Errorf("after APPEND: %q", got)
			}
			wantCode(t, "SUBTRACT", alter(false, op(kmsg.IncrementalAlterConfigOpSubtract, "leader.replication.throttled.replicas", "0:1")).ErrorCode, 0)
			if got, _ := topicConfig(t, c, topic, "leader.replication.throttled.replicas"); got != "" {
				t.Errorf("after SUBTRACT: %q", got)
			}
			wantCode(t, "DELETE", alter(false, op(kmsg.IncrementalAlterConfigOpDelete, "retention.ms")).ErrorCode, 0)
			if got, src := topicConfig(t, c, topic, "retention.ms"); got != "604800000" || src != kmsg.ConfigSourceDefaultConfig {
				t.Errorf("after DELETE retention.ms = %s from %v, want the default", got, src)
			}
			wantCode(t, "a name twice", alter(false, op(kmsg.IncrementalAlterConfigOpSet, "retention.ms", "1"),
				op(kmsg.IncrementalAlterConfigOpDelete, "retention.ms")).ErrorCode, kerr.InvalidRequest.Code)
		})
	}
}

func conformAlterConfigs(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, map[string]string{"retention.ms": "3600000"})
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			alter := func(validateOnly bool, kv ...string) kmsg.AlterConfigsResponseResource {
				t.Helper()
				req := kmsg.NewPtrAlterConfigsRequest()
				req.SetVersion(v)
				req.ValidateOnly = validateOnly
				r := kmsg.NewAlterConfigsRequestResource()
				r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
				for i := 0; i < len(kv); i += 2 {
					cfg := kmsg.NewAlterConfigsRequestResourceConfig()
					cfg.Name, cfg.Value = kv[i], kmsg.StringPtr(kv[i+1])
					r.Configs = append(r.Configs, cfg)
				}
				req.Resources = append(req.Resources, r)
				resp := c.do(req).(*kmsg.AlterConfigsResponse)
				if len(resp.Resources) != 1 || resp.Resources[0].ResourceName != topic {
					t.Fatalf("answer %+v", resp.Resources)
				}
				return resp.Resources[0]
			}
			want := fmt.Sprint(2000 + int(v))
			wantCode(t, "replace", alter(false, "segment.ms", want).ErrorCode, 0)
			if got, src := topicConfig(t, c, topic, "segment.ms"); got != want || src != kmsg.ConfigSourceDynamicTopicConfig {
				t.Errorf("segment.ms = %s from %v, want %s from the topic", got, src, want)
			}
			// Replacing drops the overrides not named.
			if got, src := topicConfig(t, c, topic, "retention.ms"); got != "604800000" || src != kmsg.ConfigSourceDefaultConfig {
				t.Errorf("retention.ms = %s from %v after a replace without it, want the default", got, src)
			}
			wantCode(t, "validate_only", alter(true, "retention.ms", "5").ErrorCode, 0)
			if got, _ := topicConfig(t, c, topic, "segment.ms"); got != want {
				t.Errorf("validate_only dropped segment.ms: %s", got)
			}
			unknown := alter(false, "no.such.config", "1")
			wantCode(t, "unknown name", unknown.ErrorCode, kerr.InvalidConfig.Code)
			if unknown.ErrorMessage == nil || *unknown.ErrorMessage != "Unknown topic config name: no.such.config" {
				t.Errorf("unknown name message %v", unknown.ErrorMessage)
			}
			small := alter(false, "segment.bytes", "1000")
			if small.ErrorCode != kerr.InvalidConfig.Code || small.ErrorMessage == nil || !strings.Contains(*small.ErrorMessage, "at least 1048576") {
				t.Errorf("segment.bytes 1000: %s %v", errName(small.ErrorCode), small.ErrorMessage)
			}
			if got, _ := topicConfig(t, c, topic, "segment.ms"); got != want {
				t.Errorf("a refused replace changed segment.ms to %s", got)
			}

			// Every broker's dynamic configs, replaced as a whole too (the shared node
			// checks retention every 50 ms already, so this changes nothing it runs).
			broker := func(kv ...string) kmsg.AlterConfigsResponseResource {
				t.Helper()
				req := kmsg.NewPtrAlterConfigsRequest()
				req.SetVersion(v)
				r := kmsg.NewAlterConfigsRequestResource()
				r.ResourceType = kmsg.ConfigResourceTypeBroker
				for i := 0; i < len(kv); i += 2 {
					cfg := kmsg.NewAlterConfigsRequestResourceConfig()
					cfg.Name, cfg.Value = kv[i], kmsg.StringPtr(kv[i+1])
					r.Configs = append(r.Configs, cfg)
				}
				req.Resources = append(req.Resources, r)
				return c.do(req).(*kmsg.AlterConfigsResponse).Resources[0]
			}
			wantCode(t, "every broker's configs", broker("log.retention.check.interval.ms", "50").ErrorCode, 0)
			if rc := brokerConfig(t, c, "log.retention.check.interval.ms"); *rc.Value != "50" || rc.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
				t.Errorf("log.retention.check.interval.ms = %s from %v", *rc.Value, rc.Source)
			}
			wantCode(t, "a read-only broker config", broker("broker.id", "7").ErrorCode, kerr.InvalidRequest.Code)
			wantCode(t, "clearing every broker's configs", broker().ErrorCode, 0)
			if rc := brokerConfig(t, c, "log.retention.check.interval.ms"); rc.Source == kmsg.ConfigSourceDynamicDefaultBrokerConfig {
				t.Errorf("log.retention.check.interval.ms still from the dynamic default after clearing")
			}
		})
	}
}

func conformDeleteRecords(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			topic := topicName(t, "")
			createTopic(t, c, topic, 1, nil)
			for i := range 5 {
				mustProduce(t, c, topic, 0, makeBatch(noProducer, fmt.Sprint(i)))
			}
			del := func(topic string, offset int64) kmsg.DeleteRecordsResponseTopicPartition {
				t.Helper()
				req := kmsg.NewPtrDeleteRecordsRequest()
				req.SetVersion(v)
				req.TimeoutMillis = 10000
				req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: topic, Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: offset}}}}
				resp := c.do(req).(*kmsg.DeleteRecordsResponse)
				if len(resp.Topics) != 1 || resp.Topics[0].Topic != topic || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Partition != 0 {
					t.Fatalf("answer %+v", resp.Topics)
				}
				return resp.Topics[0].Partitions[0]
			}
			if p := del(topic, 2); p.ErrorCode != 0 || p.LowWatermark != 2 {
				t.Errorf("delete before 2: %s, low watermark %d", errName(p.ErrorCode), p.LowWatermark)
			}
			if start := logStart(t, c, topic, 0); start != 2 {
				t.Errorf("log start %d after deleting before 2", start)
			}
			if p := del(topic, 1); p.ErrorCode != 0 || p.LowWatermark != 2 {
				t.Errorf("delete before 1 (below the start): %s, low watermark %d; want nothing changed", errName(p.ErrorCode), p.LowWatermark)
			}
			wantCode(t, "past the high watermark", del(topic, 6).ErrorCode, kerr.OffsetOutOfRange.Code)
			wantCode(t, "negative", del(topic, -2).ErrorCode, kerr.OffsetOutOfRange.Code)
			if p := del(topic, -1); p.ErrorCode != 0 || p.LowWatermark != 5 {
				t.Errorf("delete before the high watermark (-1): %s, low watermark %d", errName(p.ErrorCode), p.LowWatermark)
			}
			wantCode(t, "unknown topic", del(topicName(t, "missing"), 0).ErrorCode, kerr.UnknownTopicOrPartition.Code)
		})
	}
}
