package kafkaapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/appliance"
)

// restartableNode returns a function that starts a node of the test's own, on the
// same data directory (dir) each time, checking retention every retentionCheck.
func restartableNode(t *testing.T, retentionCheck time.Duration) (start func() *appliance.Node, dir string) {
	dir = t.TempDir()
	return func() *appliance.Node {
		t.Helper()
		n, err := startNode(dir, func(c *appliance.Config) { c.RetentionCheckInterval = retentionCheck })
		if err != nil {
			t.Fatal(err)
		}
		return n
	}, dir
}

// brokerConfig describes one config of broker "1" with its synonyms.
func brokerConfig(t testing.TB, c *kconn, name string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(3)
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeBroker, "1", []string{name}
	req.Resources = append(req.Resources, r)
	resp := c.do(req).(*kmsg.DescribeConfigsResponse)
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 || len(resp.Resources[0].Configs) != 1 {
		t.Fatalf("describe broker config %s: %+v", name, resp.Resources)
	}
	return resp.Resources[0].Configs[0]
}

// TestDynamicBrokerConfigs: broker configs changed at runtime, for all brokers
// (resource "") and for one (its id), take effect without a restart, are
// described with their sources, are refused where Kafka refuses them, and survive
// a restart (they are kept in etcd).
func TestDynamicBrokerConfigs(t *testing.T) {
	start, _ := restartableNode(t, time.Hour)
	n := start()
	defer func() { n.Close() }()
	c := dial(t, n.KafkaAddr())
	adm := newAdmin(t, n.KafkaAddr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	set := func(name, value string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: kmsg.StringPtr(value)}
	}
	alter := func(what string, brokers []int32, cfgs ...kadm.AlterConfig) {
		t.Helper()
		resps, err := adm.AlterBrokerConfigs(ctx, cfgs, brokers...)
		if err == nil {
			err = resps[0].Err
		}
		if err != nil {
			t.Fatalf("%s: %v %+v", what, err, resps)
		}
	}

	// Old records on a topic without a retention of its own: retention is a week.
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, map[string]string{"internal.segment.bytes": "1000"})
	old := time.Now().Add(-time.Hour).UnixMilli()
	for i := range 5 {
		mustProduce(t, c, topic, 0, makeBatch(batchOpts{producerID: -1, epoch: -1, seq: -1, timestamp: old + int64(i)}, strings.Repeat("x", 600)))
	}
	// Every broker keeps records a minute; this one checks retention every 50 ms.
	alter("cluster-wide log.retention.ms", nil, set("log.retention.ms", "60000"))
	alter("this broker's check interval", []int32{1}, set("log.retention.check.interval.ms", "50"))
	waitFor(t, 10*time.Second, "retention of the hour-old records", func() bool { return logStart(t, c, topic, 0) == 5 })
	if v, src := topicConfig(t, c, topic, "retention.ms"); v != "60000" || src != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("topic retention.ms = %s from %v, want 60000 from the dynamic default", v, src)
	}
	// This broker's own value wins over the default.
	alter("this broker's log.retention.ms", []int32{1}, set("log.retention.ms", "120000"))
	if v, src := topicConfig(t, c, topic, "retention.ms"); v != "120000" || src != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("topic retention.ms = %s from %v, want 120000 from the broker", v, src)
	}
	rc := brokerConfig(t, c, "log.retention.ms")
	if rc.Value == nil || *rc.Value != "120000" || rc.Source != kmsg.ConfigSourceDynamicBrokerConfig || rc.ReadOnly ||
		len(rc.ConfigSynonyms) != 3 || rc.ConfigSynonyms[1].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || rc.Documentation == nil {
		t.Errorf("log.retention.ms of broker 1: %+v", rc)
	}

	// auto.create.topics.enable=false: Metadata creates nothing any more.
	alter("auto.create.topics.enable", nil, set("auto.create.topics.enable", "false"))
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(8)
	req.AllowAutoTopicCreation = true
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topicName(t, "auto"))}}
	if rt := c.do(req).(*kmsg.MetadataResponse).Topics[0]; rt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("auto-creation after auto.create.topics.enable=false: %s", errName(rt.ErrorCode))
	}
	if rc := brokerConfig(t, c, "auto.create.topics.enable"); *rc.Value != "false" || rc.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("auto.create.topics.enable: %s from %v", *rc.Value, rc.Source)
	}

	// Refused as Kafka refuses them, and nothing written.
	for _, tc := range []struct {
		brokers []int32
		cfg     kadm.AlterConfig
		msg     string
	}{
		{nil, set("socket.request.max.bytes", "1000"), "Cannot update these configs dynamically"},
		{nil, set("no.such.config", "1"), "Unknown broker config name: no.such.config"},
		{nil, set("log.retention.ms", "soon"), "Invalid value soon for configuration log.retention.ms: Not a number of type LONG"},
		{nil, set("log.segment.bytes", "1000"), "Value must be at least 1048576"},
		{[]int32{1}, set("num.partitions", "0"), "Invalid value 0 for configuration num.partitions: Value must be at least 1"},
		{nil, set("log.retention.check.interval.ms", "1m"), "Invalid value 1m for configuration log.retention.check.interval.ms"},
	} {
		resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{tc.cfg}, tc.brokers...)
		if err != nil || len(resps) != 1 {
			t.Fatalf("%s: %v %+v", tc.cfg.Name, err, resps)
		}
		if !errors.Is(resps[0].Err, kerr.InvalidRequest) || !strings.Contains(resps[0].ErrMessage, tc.msg) {
			t.Errorf("%s=%s: %v %q, want INVALID_REQUEST %q", tc.cfg.Name, *tc.cfg.Value, resps[0].Err, resps[0].ErrMessage, tc.msg)
		}
	}
	other := kmsg.NewPtrIncrementalAlterConfigsRequest()
	other.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "7",
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "num.partitions", Value: kmsg.StringPtr("3")}}}}
	if r := c.do(other).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; r.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("altering broker 7 at broker 1: %s", errName(r.ErrorCode))
	}
	if resps, err := adm.ValidateAlterBrokerConfigs(ctx, []kadm.AlterConfig{set("num.partitions", "3")}); err != nil || resps[0].Err != nil {
		t.Fatalf("validate only: %v %+v", err, resps)
	}
	if rc := brokerConfig(t, c, "num.partitions"); *rc.Value != "1" {
		t.Errorf("validate_only changed num.partitions to %s", *rc.Value)
	}

	// Kept across a restart.
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = start()
	c = dial(t, n.KafkaAddr())
	if v, src := topicConfig(t, c, topic, "retention.ms"); v != "120000" || src != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("after a restart retention.ms = %s from %v", v, src)
	}
	if rt := c.do(req).(*kmsg.MetadataResponse).Topics[0]; rt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("auto-creation after a restart: %s", errName(rt.ErrorCode))
	}
	// Deleting a broker's own value brings back the default's.
	adm = newAdmin(t, n.KafkaAddr())
	alter("delete this broker's log.retention.ms", []int32{1}, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "log.retention.ms"})
	if v, src := topicConfig(t, c, topic, "retention.ms"); v != "60000" || src != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("after the delete retention.ms = %s from %v", v, src)
	}
}
