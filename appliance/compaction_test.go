package appliance

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/cluster"
	"skiff/internal/batch"
	"skiff/replication"
)

// TestStableGroupOutlivesRetention: __consumer_offsets is compacted, so a
// stable group's offsets stay in its log however long the group lives, without
// the coordinator writing them again. With time shortened through configs
// (retention.ms 1 s, small segments rolled every 200 ms, compaction at any
// dirty ratio, retention checked every 100 ms) and another group committing all
// along, the stable group's one commit is still there, once, after ten times
// retention.ms: in OffsetFetch, and in the log itself (the truth Pebble is
// rebuilt from), which was compacted meanwhile and never cut by retention.
func TestStableGroupOutlivesRetention(t *testing.T) {
	const retention = time.Second
	n := startLoopbackNode(t, Config{RetentionCheckInterval: 100 * time.Millisecond, CleanerBackoff: 50 * time.Millisecond,
		Groups: GroupConfig{OffsetsTopicPartitions: 1, OffsetsTopicReplicationFactor: 1, OffsetsRetentionCheckInterval: 100 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := n.store.CreateTopic(ctx, cluster.Topic{Name: cluster.OffsetsTopic, ID: cluster.NewUUID(), Partitions: 1,
		ReplicationFactor: 1, Assignment: [][]int32{{n.id}}, Configs: map[string]string{
			cluster.ConfigCleanupPolicy: cluster.CleanupCompact, cluster.ConfigRetentionMs: strconv.Itoa(int(retention.Milliseconds())),
			cluster.ConfigInternalSegmentBytes: "4096", cluster.ConfigSegmentMs: "200", cluster.ConfigMinCleanableRatio: "0.01",
			cluster.ConfigDeleteRetentionMs: "1000"}}); err != nil {
		t.Fatal(err)
	}
	addr := n.KafkaAddr()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}

	member, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("stable"), kgo.ConsumeTopics("t"),
		kgo.DisableAutoCommit(), kgo.SessionTimeout(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	for {
		if g, err := adm.DescribeGroups(ctx, "stable"); err == nil && g["stable"].State == "Stable" {
			break
		}
		member.PollFetches(shortCtx(ctx))
		if ctx.Err() != nil {
			t.Fatal("the group did not become stable")
		}
	}
	var commitErr error
	member.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"t": {0: {Epoch: -1, Offset: 42}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err == nil {
				err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
			}
			commitErr = err
		})
	if commitErr != nil {
		t.Fatal(commitErr)
	}

	start := time.Now()
	busy := 0
	for time.Since(start) < 10*retention {
		member.PollFetches(shortCtx(ctx)) // keeps the member's heartbeats going
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "t", Partition: 0, At: int64(busy), LeaderEpoch: -1})
		if _, err := adm.CommitOffsets(ctx, "busy", os); err != nil {
			t.Fatal(err)
		}
		busy++
	}

	fetched, err := adm.FetchOffsets(ctx, "stable")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("t", 0); !ok || o.At != 42 {
		t.Fatalf("the stable group's offset after %v: %+v %v", time.Since(start), o, ok)
	}
	if g, err := adm.DescribeGroups(ctx, "stable"); err != nil || g["stable"].State != "Stable" {
		t.Fatalf("the group is no longer stable: %v", err)
	}

	p := n.parts.Partition(cluster.OffsetsTopic, 0)
	if p.LogStartOffset() != 0 {
		t.Fatalf("retention cut the compacted log at %d", p.LogStartOffset())
	}
	stable, busyRecords := 0, 0
	if err := batch.Split(readLog(t, p), func(_ batch.Header, raw []byte) error {
		return batch.Records(raw, func(r batch.Record) error {
			var k kmsg.OffsetCommitKey
			if k.ReadFrom(r.Key) != nil || k.Version > 1 {
				return nil // group metadata
			}
			switch k.Group {
			case "stable":
				stable++
			case "busy":
				busyRecords++
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	if stable != 1 {
		t.Fatalf("the stable group's commit is in the log %d times, want once", stable)
	}
	if busyRecords >= busy/2 || busy < 20 {
		t.Fatalf("%d of the %d commits of the busy group are in the log: not compacted", busyRecords, busy)
	}
	t.Logf("after %v: %d commits of another group, %d left in the log", time.Since(start), busy, busyRecords)
}

func shortCtx(parent context.Context) context.Context {
	ctx, cancel := context.WithTimeout(parent, 20*time.Millisecond)
	context.AfterFunc(ctx, cancel)
	return ctx
}

// readLog returns the committed batches of p from its log start.
func readLog(t *testing.T, p *replication.Partition) []byte {
	t.Helper()
	s, err := p.Read(p.LogStartOffset(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, err = s.WriteTo(&buf)
	s.Release()
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
