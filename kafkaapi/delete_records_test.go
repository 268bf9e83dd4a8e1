package kafkaapi_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumeFrom reads n records of topic/0 with franz-go, starting at offset with
// the given reset policy, and returns their offsets.
func consumeFrom(t *testing.T, addr, topic string, offset int64, reset kgo.Offset, n int) []int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeResetOffset(reset),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(offset)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []int64
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consuming from %d: got offsets %v: %v", offset, got, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r.Offset) })
	}
	return got
}

// TestDeleteRecords: kadm deletes the records before an offset; a consumer reading
// below the new start gets OFFSET_OUT_OF_RANGE and goes on by its reset policy;
// retention removes the segments below the start; the start survives a restart.
func TestDeleteRecords(t *testing.T) {
	start, dir := restartableNode(t, 50*time.Millisecond)
	n := start()
	defer func() { n.Close() }()
	c := dial(t, n.KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, map[string]string{"internal.segment.bytes": "200"})
	for i := range 10 {
		mustProduce(t, c, topic, 0, makeBatch(noProducer, fmt.Sprintf("record-%02d-%s", i, "0123456789012345678901234567890123456789")))
	}
	segments := func() int {
		m, err := filepath.Glob(filepath.Join(dir, "topics", topic+"-0", "*.log"))
		if err != nil {
			t.Fatal(err)
		}
		return len(m)
	}
	before := segments()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var offs kadm.Offsets
	offs.AddOffset(topic, 0, 6, -1)
	resps, err := newAdmin(t, n.KafkaAddr()).DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := resps.Lookup(topic, 0); !ok || r.Err != nil || r.LowWatermark != 6 {
		t.Fatalf("delete records before 6: %+v", r)
	}
	if s := logStart(t, c, topic, 0); s != 6 {
		t.Fatalf("log start %d, want 6", s)
	}
	resp := c.do(fetchRequest(11, 0, 0, 1<<20, fetchPart{topic: topic, offset: 3})).(*kmsg.FetchResponse)
	if p := fetchedPartition(t, resp, topic, 0); p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset != 6 {
		t.Fatalf("fetch at 3: %s, log start %d; want OFFSET_OUT_OF_RANGE, 6", errName(p.ErrorCode), p.LogStartOffset)
	}

	// franz-go consumers that start below the new start: reset to the earliest
	// record left, or to the end.
	if got := consumeFrom(t, n.KafkaAddr(), topic, 2, kgo.NewOffset().AtStart(), 4); got[0] != 6 || got[3] != 9 {
		t.Fatalf("reset to the start read offsets %v, want 6..9", got)
	}
	atEnd, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(2)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer atEnd.Close()
	var got []int64
	waitFor(t, 20*time.Second, "the reset-to-end consumer to read a record produced after it", func() bool {
		mustProduce(t, c, topic, 0, makeBatch(noProducer, "after"))
		pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer pcancel()
		fs := atEnd.PollFetches(pctx)
		fs.EachError(func(_ string, _ int32, err error) {
			if pctx.Err() == nil {
				t.Fatalf("fetch: %v", err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r.Offset) })
		return len(got) > 0
	})
	if got[0] < 10 {
		t.Fatalf("reset to the end read offsets %v, want only records produced after the reset (10 and later)", got)
	}

	waitFor(t, 10*time.Second, "retention to delete the segments below the start", func() bool { return segments() < before })
	if s := logStart(t, c, topic, 0); s != 6 {
		t.Fatalf("log start %d after retention, want 6", s)
	}

	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = start()
	c = dial(t, n.KafkaAddr())
	// The restarted node leads again once the controller admits its new broker
	// epoch; until then ListOffsets answers NOT_LEADER_FOR_PARTITION.
	var p kmsg.ListOffsetsResponseTopicPartition
	waitFor(t, 10*time.Second, "the restarted node to lead the partition", func() bool {
		p = listOffsetsAt(t, c, 5, topic, 0, -2)
		return p.ErrorCode != kerr.NotLeaderForPartition.Code && p.ErrorCode != kerr.LeaderNotAvailable.Code
	})
	wantCode(t, "list offsets after a restart", p.ErrorCode, 0)
	if p.Offset != 6 {
		t.Fatalf("log start %d after a restart, want 6", p.Offset)
	}
}
