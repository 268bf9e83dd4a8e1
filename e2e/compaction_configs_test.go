package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/testnode"
)

// TestCompactionConfigsAtRuntime: the configs of compaction and retention take
// effect on a running topic when kadm changes them with IncrementalAlterConfigs.
// A delete topic written 10 times over is compacted once cleanup.policy becomes
// compact (with min.cleanable.dirty.ratio 0.01); its retention.ms, without effect
// under compact alone, deletes its hour-old segments once the policy becomes
// compact,delete.
func TestCompactionConfigsAtRuntime(t *testing.T) {
	n := testnode.Start(t, append(compactArgs, "--log-retention-check-interval", "100ms")...)
	const topic, keys, rounds = "runtime-compact", 60, 10
	createTopicWith(t, n.Addr, topic, 1, 1, map[string]string{"cleanup.policy": "delete", "segment.ms": "1000", "retention.ms": "-1"})
	h := produceOverwrites(t, []*kgo.Client{newClient(t, n.Addr)}, topic, keys, rounds, time.Now().Add(-time.Hour))
	if passes := metric(t, n, "skiff_log_cleaner_passes_total"); passes != 0 {
		t.Fatalf("%v cleaner passes over a topic with cleanup.policy=delete", passes)
	}

	adm := kadm.NewClient(newClient(t, n.Addr))
	alter := func(set map[string]string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var cs []kadm.AlterConfig
		for k, v := range set {
			cs = append(cs, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kmsg.StringPtr(v)})
		}
		resps, err := adm.AlterTopicConfigs(ctx, cs, topic)
		if err == nil {
			err = resps[0].Err
		}
		if err != nil {
			t.Fatalf("alter %v: %v", set, err)
		}
	}

	alter(map[string]string{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "retention.ms": "60000"})
	poll(t, time.Minute, "the cleaner to compact the topic", func() bool {
		return metric(t, n, "skiff_log_cleaner_passes_total") >= 1 && metric(t, n, "skiff_log_cleaner_uncleaned_bytes") == 0
	})
	got := readCompacted(t, n.Addr, topic)
	checkFinal(t, topic, got, h, false)
	if len(got) >= keys*rounds/3 {
		t.Fatalf("%d of %d records left: not compacted", len(got), keys*rounds)
	}
	if start := startOffset(t, adm, topic); start != 0 {
		t.Fatalf("log start %d: retention.ms acted under cleanup.policy=compact", start)
	}

	// Every produced record is an hour old: retention leaves the segment of the
	// sentinel readCompacted wrote just now (segment.ms rolled before it).
	alter(map[string]string{"cleanup.policy": "compact,delete"})
	poll(t, 30*time.Second, "retention to delete the hour-old segments", func() bool {
		return startOffset(t, adm, topic) >= int64(keys*rounds)
	})
}

// startOffset returns the log start offset of partition 0 of topic.
func startOffset(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("start offset of %s: %v", topic, o.Err)
	}
	return o.Offset
}

// TestCleanerSettingsAtRuntime: log.cleaner.threads is a dynamic broker config:
// set with IncrementalAlterConfigs on a running node, the node runs that many
// cleaner threads, and a topic made compacted afterwards is still compacted.
func TestCleanerSettingsAtRuntime(t *testing.T) {
	n := testnode.Start(t, compactArgs...)
	if th := metric(t, n, "skiff_log_cleaner_threads"); th != 1 {
		t.Fatalf("%v cleaner threads at start, want 1", th)
	}
	adm := kadm.NewClient(newClient(t, n.Addr))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	three, rate := "3", "10485760"
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "log.cleaner.threads", Value: &three},
		{Op: kadm.SetConfig, Name: "log.cleaner.io.max.bytes.per.second", Value: &rate},
	}); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "3 cleaner threads", func() bool { return metric(t, n, "skiff_log_cleaner_threads") == 3 })

	const topic, keys, rounds = "threads-compact", 50, 6
	createTopicWith(t, n.Addr, topic, 1, 1, map[string]string{"cleanup.policy": "compact", "segment.ms": "1000", "min.cleanable.dirty.ratio": "0.01"})
	h := produceOverwrites(t, []*kgo.Client{newClient(t, n.Addr)}, topic, keys, rounds, time.Now().Add(-time.Hour))
	poll(t, time.Minute, "the cleaner to compact the topic", func() bool {
		return metric(t, n, "skiff_log_cleaner_passes_total") >= 1 && metric(t, n, "skiff_log_cleaner_uncleaned_bytes") == 0
	})
	checkFinal(t, topic, readCompacted(t, n.Addr, topic), h, false)
}
