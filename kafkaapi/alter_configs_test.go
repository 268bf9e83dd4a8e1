package kafkaapi_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaTopicConfigs are Kafka 4.x's topic configs (LogConfig), each with a valid
// value other than its default.
var kafkaTopicConfigs = map[string]string{
	"cleanup.policy":                          "compact,delete",
	"compression.gzip.level":                  "5",
	"compression.lz4.level":                   "3",
	"compression.type":                        "zstd",
	"compression.zstd.level":                  "7",
	"delete.retention.ms":                     "3600000",
	"file.delete.delay.ms":                    "1000",
	"flush.messages":                          "1000",
	"flush.ms":                                "2000",
	"follower.replication.throttled.replicas": "0:1",
	"index.interval.bytes":                    "8192",
	"leader.replication.throttled.replicas":   "*",
	"local.retention.bytes":                   "1073741824",
	"local.retention.ms":                      "86400000",
	"max.compaction.lag.ms":                   "86400000",
	"max.message.bytes":                       "2097152",
	"message.timestamp.after.max.ms":          "7200000",
	"message.timestamp.before.max.ms":         "86400000",
	"message.timestamp.type":                  "LogAppendTime",
	"min.cleanable.dirty.ratio":               "0.3",
	"min.compaction.lag.ms":                   "1000",
	"min.insync.replicas":                     "1",
	"preallocate":                             "true",
	"remote.log.copy.disable":                 "true",
	"remote.log.delete.on.disable":            "true",
	"remote.storage.enable":                   "false",
	"retention.bytes":                         "1073741824",
	"retention.ms":                            "86400000",
	"segment.bytes":                           "1048576",
	"segment.index.bytes":                     "4096",
	"segment.jitter.ms":                       "1000",
	"segment.ms":                              "3600000",
	"unclean.leader.election.enable":          "true",
}

func newAdmin(t testing.TB, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// TestTopicConfigsKadm: franz-go's admin client sets every Kafka topic config, at
// creation and by IncrementalAlterConfigs, and gets Kafka's errors for bad values
// and unknown names.
func TestTopicConfigsKadm(t *testing.T) {
	n := sharedNode(t)
	adm := newAdmin(t, n.KafkaAddr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	all := map[string]*string{}
	var set []kadm.AlterConfig
	for name, v := range kafkaTopicConfigs {
		all[name] = kmsg.StringPtr(v)
		set = append(set, kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: kmsg.StringPtr(v)})
	}
	created := topicName(t, "created")
	if resp, err := adm.CreateTopic(ctx, 1, 1, all, created); err != nil || resp.Err != nil {
		t.Fatalf("create with every config: %v %v %s", err, resp.Err, resp.ErrMessage)
	}
	altered := topicName(t, "altered")
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, altered); err != nil {
		t.Fatal(err)
	}
	resps, err := adm.AlterTopicConfigs(ctx, set, altered)
	if err != nil || len(resps) != 1 || resps[0].Err != nil {
		t.Fatalf("alter every config: %v %+v", err, resps)
	}
	described, err := adm.DescribeTopicConfigs(ctx, created, altered)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range described {
		if rc.Err != nil {
			t.Fatalf("describe %s: %v", rc.Name, rc.Err)
		}
		got := map[string]kadm.Config{}
		for _, c := range rc.Configs {
			got[c.Key] = c
		}
		for name, want := range kafkaTopicConfigs {
			c, ok := got[name]
			if !ok || c.MaybeValue() != want || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
				t.Errorf("%s: %s = %q from %v, want %q from the topic", rc.Name, name, c.MaybeValue(), c.Source, want)
			}
		}
	}

	for _, tc := range []struct{ name, value, msg string }{
		{"no.such.config", "1", "Unknown topic config name: no.such.config"},
		{"retention.ms", "soon", "Invalid value soon for configuration retention.ms: Not a number of type LONG"},
		{"retention.ms", "-2", "Invalid value -2 for configuration retention.ms: Value must be at least -1"},
		{"segment.bytes", "1048575", "Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576"},
		{"max.message.bytes", "2147483648", "Invalid value 2147483648 for configuration max.message.bytes: Not a number of type INT"},
		{"compression.type", "brotli", "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{"compression.gzip.level", "10", "Value must be between 1 and 9 or equal to -1"},
		{"min.cleanable.dirty.ratio", "2", "Value must be no more than 1"},
		{"message.timestamp.type", "createtime", "String must be one of: CreateTime, LogAppendTime"},
		{"unclean.leader.election.enable", "yes", "Expected value to be either true or false"},
		{"remote.storage.enable", "true", "Tiered Storage functionality is disabled in the broker"},
		{"leader.replication.throttled.replicas", "all", "must be the literal '*'"},
	} {
		for _, validate := range []bool{false, true} {
			alter := adm.AlterTopicConfigs
			if validate {
				alter = adm.ValidateAlterTopicConfigs
			}
			resps, err := alter(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: tc.name, Value: kmsg.StringPtr(tc.value)}}, altered)
			if err != nil || len(resps) != 1 {
				t.Fatalf("%s=%s: %v %+v", tc.name, tc.value, err, resps)
			}
			if !errors.Is(resps[0].Err, kerr.InvalidConfig) || !strings.Contains(resps[0].ErrMessage, tc.msg) {
				t.Errorf("%s=%s (validate only %v): %v %q, want INVALID_CONFIG %q", tc.name, tc.value, validate, resps[0].Err, resps[0].ErrMessage, tc.msg)
			}
		}
		resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{tc.name: kmsg.StringPtr(tc.value)}, topicName(t, "bad"))
		if err == nil {
			err = resp.Err
		}
		if !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(resp.ErrMessage, tc.msg) {
			t.Errorf("create with %s=%s: %v %q, want INVALID_CONFIG %q", tc.name, tc.value, err, resp.ErrMessage, tc.msg)
		}
	}
	// The refused changes left the topic as it was.
	if v, _ := topicConfig(t, dial(t, n.KafkaAddr()), altered, "retention.ms"); v != kafkaTopicConfigs["retention.ms"] {
		t.Errorf("retention.ms = %s after refused changes", v)
	}
}

// TestAlterRetentionRemovesSegments: IncrementalAlterConfigs lowers retention.ms of
// a running topic, and its old segments go without a restart.
func TestAlterRetentionRemovesSegments(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	adm := newAdmin(t, n.KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, map[string]string{"internal.segment.bytes": "1000", "retention.ms": "-1"})
	old := time.Now().Add(-time.Hour).UnixMilli()
	for i := range 10 {
		mustProduce(t, c, topic, 0, makeBatch(batchOpts{producerID: -1, epoch: -1, seq: -1, timestamp: old + int64(i)}, strings.Repeat("x", 600)))
	}
	dir := filepath.Join(shared.dir, "topics", topic+"-0")
	segments := func() int {
		m, err := filepath.Glob(filepath.Join(dir, "*.log"))
		if err != nil {
			t.Fatal(err)
		}
		return len(m)
	}
	if n := segments(); n < 10 {
		t.Fatalf("%d segments, want one per batch", n)
	}
	if start := logStart(t, c, topic, 0); start != 0 {
		t.Fatalf("log start %d before retention", start)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("60000")}}, topic)
	if err != nil || resps[0].Err != nil {
		t.Fatalf("alter retention.ms: %v %+v", err, resps)
	}
	waitFor(t, 10*time.Second, "retention to delete the hour-old segments", func() bool {
		return logStart(t, c, topic, 0) == 10 && segments() == 1
	})
	if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%020d.log", 10))); err != nil {
		t.Fatalf("the remaining segment is not the one at the log end: %v", err)
	}
}
