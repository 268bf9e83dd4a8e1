package kafkaapi_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/kafkaapi"
)

// longWait is a max_wait_ms that no answer in these tests should need: a fetch that
// is answered sooner was answered by an event, not by the server's timer.
const longWait = 10 * time.Second

// TestFetchLongPoll checks parked fetches: woken by a produce on another connection,
// answered after max_wait when nothing arrives, and answered at once on an error.
func TestFetchLongPoll(t *testing.T) {
	n := sharedNode(t)
	admin := dial(t, n.KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, admin, topic, 1, nil)
	mustProduce(t, admin, topic, 0, makeBatch(noProducer, "before"))

	t.Run("WokenByProduce", func(t *testing.T) {
		c := dial(t, n.KafkaAddr())
		end := logEnd(t, admin, topic, 0)
		start := time.Now()
		req := fetchRequest(11, int32(longWait.Milliseconds()), 1, 1<<20, fetchPart{topic: topic, offset: end})
		corr := c.send(req)
		// Parked: no answer for a while. (Answering early with nothing would be the bug.)
		if frame, err := c.readFrame(300 * time.Millisecond); err == nil {
			t.Fatalf("a fetch at the log end with min_bytes 1 was answered at once: %x", frame)
		} else if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal(err)
		}
		mustProduce(t, dial(t, n.KafkaAddr()), topic, 0, makeBatch(noProducer, "wake", "up"))
		resp := c.recv(req, corr).(*kmsg.FetchResponse)
		if took := time.Since(start); took >= longWait {
			t.Errorf("answered after %v, not when the records arrived: the produce did not wake the fetch", took)
		}
		p := fetchedPartition(t, resp, topic, 0)
		wantCode(t, "fetch", p.ErrorCode, 0)
		if _, recs := decodeBatches(t, p.RecordBatches); !slices.Equal(values(recs), []string{"wake", "up"}) || recs[0].offset != end {
			t.Fatalf("woken fetch returned %+v, want wake, up at %d", recs, end)
		}
	})

	t.Run("NothingArrives", func(t *testing.T) {
		c := dial(t, n.KafkaAddr())
		end := logEnd(t, admin, topic, 0)
		const maxWait = 200 * time.Millisecond
		start := time.Now()
		resp := c.do(fetchRequest(11, int32(maxWait.Milliseconds()), 1, 1<<20, fetchPart{topic: topic, offset: end})).(*kmsg.FetchResponse)
		if took := time.Since(start); took < maxWait {
			t.Errorf("answered after %v, before max_wait %v", took, maxWait)
		}
		p := fetchedPartition(t, resp, topic, 0)
		wantCode(t, "fetch", p.ErrorCode, 0)
		if len(p.RecordBatches) != 0 || p.HighWatermark != end {
			t.Fatalf("%d record bytes, high watermark %d; want none and %d", len(p.RecordBatches), p.HighWatermark, end)
		}
	})

	t.Run("MinBytesNotReached", func(t *testing.T) {
		// Less data than min_bytes: wait max_wait, then answer with what there is.
		c := dial(t, n.KafkaAddr())
		const maxWait = 300 * time.Millisecond
		start := time.Now()
		resp := c.do(fetchRequest(11, int32(maxWait.Milliseconds()), 1<<20, 1<<20, fetchPart{topic: topic})).(*kmsg.FetchResponse)
		if took := time.Since(start); took < maxWait {
			t.Errorf("answered after %v with less than min_bytes, before max_wait %v", took, maxWait)
		}
		_, recs := decodeBatches(t, fetchedPartition(t, resp, topic, 0).RecordBatches)
		if len(recs) == 0 || recs[0].value != "before" {
			t.Fatalf("records %+v, want everything from offset 0", recs)
		}
	})

	t.Run("MinBytesReached", func(t *testing.T) {
		c := dial(t, n.KafkaAddr())
		start := time.Now()
		resp := c.do(fetchRequest(11, int32(longWait.Milliseconds()), 1, 1<<20, fetchPart{topic: topic})).(*kmsg.FetchResponse)
		if took := time.Since(start); took >= longWait {
			t.Errorf("data at hand, but answered only after max_wait (%v)", took)
		}
		if len(fetchedPartition(t, resp, topic, 0).RecordBatches) == 0 {
			t.Fatal("no records")
		}
	})

	t.Run("ErrorAnswersAtOnce", func(t *testing.T) {
		c := dial(t, n.KafkaAddr())
		end := logEnd(t, admin, topic, 0)
		start := time.Now()
		resp := c.do(fetchRequest(11, int32(longWait.Milliseconds()), 1, 1<<20,
			fetchPart{topic: topic, offset: end}, fetchPart{topic: topic, partition: 9})).(*kmsg.FetchResponse)
		if took := time.Since(start); took >= longWait {
			t.Errorf("a fetch with a partition error waited max_wait (%v)", took)
		}
		wantCode(t, "partition 9", fetchedPartition(t, resp, topic, 9).ErrorCode, kerr.UnknownTopicOrPartition.Code)
		wantCode(t, "partition 0", fetchedPartition(t, resp, topic, 0).ErrorCode, 0)
	})
}

// TestFetchOffsetOutOfRange checks fetch offsets above the high watermark and below
// the log start (moved by retention).
func TestFetchOffsetOutOfRange(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	mustProduce(t, c, topic, 0, makeBatch(noProducer, "a", "b"))
	for _, v := range []int16{4, 11} {
		for _, off := range []int64{3, 100, -1, -2} {
			resp := c.do(fetchRequest(v, 0, 0, 1<<20, fetchPart{topic: topic, offset: off})).(*kmsg.FetchResponse)
			p := fetchedPartition(t, resp, topic, 0)
			wantCode(t, fmt.Sprintf("v%d offset %d", v, off), p.ErrorCode, kerr.OffsetOutOfRange.Code)
			if len(p.RecordBatches) != 0 {
				t.Errorf("v%d offset %d: %d record bytes with the error", v, off, len(p.RecordBatches))
			}
		}
	}

	t.Run("BelowLogStart", func(t *testing.T) {
		// retention.ms=1 and old timestamps: the shared node's retention check (every
		// 50 ms) deletes every batch, and the log start moves to the log end.
		old := topicName(t, "")
		createTopic(t, c, old, 1, map[string]string{"retention.ms": "1"})
		ts := time.Now().Add(-time.Hour).UnixMilli()
		for i := range 3 {
			mustProduce(t, c, old, 0, makeBatch(batchOpts{producerID: -1, epoch: -1, seq: -1, timestamp: ts}, fmt.Sprint(i)))
		}
		end := logEnd(t, c, old, 0)
		waitFor(t, 20*time.Second, "retention to delete the old batches", func() bool { return logStart(t, c, old, 0) == end })
		for _, off := range []int64{0, end - 1} {
			p := fetchedPartition(t, fetchNow(t, c, 1<<20, fetchPart{topic: old, offset: off}), old, 0)
			wantCode(t, fmt.Sprintf("fetch offset %d below the log start %d", off, end), p.ErrorCode, kerr.OffsetOutOfRange.Code)
		}
		p := fetchedPartition(t, fetchNow(t, c, 1<<20, fetchPart{topic: old, offset: end}), old, 0)
		wantCode(t, "fetch at the log start", p.ErrorCode, 0)
		if p.LogStartOffset != end || p.HighWatermark != end || len(p.RecordBatches) != 0 {
			t.Fatalf("log start %d, high watermark %d, %d record bytes; want %d, %d, none", p.LogStartOffset, p.HighWatermark, len(p.RecordBatches), end, end)
		}
	})
}

// TestFetchLimits checks partition_max_bytes and max_bytes: whole batches only, and
// the first batch of the response sent whole however large (KIP-74).
func TestFetchLimits(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	value := strings.Repeat("v", 400)

	t.Run("OnePartition", func(t *testing.T) {
		topic := topicName(t, "")
		createTopic(t, c, topic, 1, nil)
		b1, b2 := makeBatch(noProducer, "1"+value), makeBatch(noProducer, "2"+value)
		mustProduce(t, c, topic, 0, b1)
		mustProduce(t, c, topic, 0, b2)
		s1, s2 := int32(len(b1)), int32(len(b2))
		for _, tc := range []struct {
			name               string
			partMax, max       int32
			wantBatches, bytes int
		}{
			{"partition-max-below-first-batch", 10, 1 << 20, 1, int(s1)},
			{"partition-max-1", 1, 1 << 20, 1, int(s1)},
			{"max-below-first-batch", 1 << 20, 10, 1, int(s1)},
			{"partition-max-one-short-of-two", s1 + s2 - 1, 1 << 20, 1, int(s1)},
			{"partition-max-two", s1 + s2, 1 << 20, 2, int(s1 + s2)},
			{"max-one-short-of-two", 1 << 20, s1 + s2 - 1, 1, int(s1)},
			{"max-two", 1 << 20, s1 + s2, 2, int(s1 + s2)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for _, v := range []int16{4, 11} {
					resp := c.do(fetchRequest(v, 0, 0, tc.max, fetchPart{topic: topic, maxBytes: tc.partMax})).(*kmsg.FetchResponse)
					p := fetchedPartition(t, resp, topic, 0)
					wantCode(t, "fetch", p.ErrorCode, 0)
					batches, _ := decodeBatches(t, p.RecordBatches)
					if len(batches) != tc.wantBatches || len(p.RecordBatches) != tc.bytes {
						t.Errorf("v%d: %d batches in %d bytes, want %d in %d", v, len(batches), len(p.RecordBatches), tc.wantBatches, tc.bytes)
					}
				}
			})
		}
	})

	t.Run("TwoPartitions", func(t *testing.T) {
		topic := topicName(t, "")
		createTopic(t, c, topic, 2, nil)
		b0, b1 := makeBatch(noProducer, "p0"+value), makeBatch(noProducer, "p1"+value)
		mustProduce(t, c, topic, 0, b0)
		mustProduce(t, c, topic, 1, b1)
		s0, s1 := int32(len(b0)), int32(len(b1))
		big := int32(1 << 20)
		for _, tc := range []struct {
			name  string
			max   int32
			parts []fetchPart
			want0 bool // partition 0 returns its batch
			want1 bool
		}{
			{"max-fits-both", s0 + s1, []fetchPart{{topic: topic, partition: 0}, {topic: topic, partition: 1}}, true, true},
			{"max-one-short", s0 + s1 - 1, []fetchPart{{topic: topic, partition: 0}, {topic: topic, partition: 1}}, true, false},
			{"max-one-short-reversed", s0 + s1 - 1, []fetchPart{{topic: topic, partition: 1}, {topic: topic, partition: 0}}, false, true},
			{"max-tiny", 10, []fetchPart{{topic: topic, partition: 0}, {topic: topic, partition: 1}}, true, false},
			// Only the first batch of the response may exceed partition_max_bytes.
			{"first-partition-over-its-max", big, []fetchPart{{topic: topic, partition: 0, maxBytes: 10}, {topic: topic, partition: 1}}, true, true},
			{"second-partition-over-its-max", big, []fetchPart{{topic: topic, partition: 0}, {topic: topic, partition: 1, maxBytes: 10}}, true, false},
			// The first partition has nothing to send: the second's batch is the first.
			{"first-partition-empty", 10, []fetchPart{{topic: topic, partition: 0, offset: 1}, {topic: topic, partition: 1, maxBytes: 10}}, false, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				resp := fetchNow(t, c, tc.max, tc.parts...)
				for _, want := range []struct {
					partition int32
					data      bool
					size      int32
				}{{0, tc.want0, s0}, {1, tc.want1, s1}} {
					p := fetchedPartition(t, resp, topic, want.partition)
					wantCode(t, fmt.Sprintf("partition %d", want.partition), p.ErrorCode, 0)
					if p.HighWatermark != 1 {
						t.Errorf("partition %d: high watermark %d, want 1 whether or not records fit", want.partition, p.HighWatermark)
					}
					got := len(p.RecordBatches)
					if (want.data && got != int(want.size)) || (!want.data && got != 0) {
						t.Errorf("partition %d: %d record bytes, want its batch: %v (%d bytes)", want.partition, got, want.data, want.size)
					}
					decodeBatches(t, p.RecordBatches)
				}
			})
		}
	})
}

// TestFetchLeaderEpoch checks current_leader_epoch (Fetch v9+): the epoch Metadata
// reports is accepted, a newer one is UNKNOWN_LEADER_EPOCH, and before v9 the field
// is not on the wire.
//
// FENCED_LEADER_EPOCH needs a partition whose epoch is above 0, and on a single node
// the epoch never moves (leadership changes come with ISR replication), while -1 means
// "no check"; so an older epoch is checked on checkLeaderEpoch itself
// (TestCheckLeaderEpoch), and here only if the epoch is ever above 0.
func TestFetchLeaderEpoch(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	mustProduce(t, c, topic, 0, makeBatch(noProducer, "epoch"))
	md := metadataTopic(t, c, topic)
	epoch := md.Partitions[0].LeaderEpoch
	if epoch < 0 {
		t.Fatalf("metadata leader epoch %d", epoch)
	}
	for v := int16(4); v <= 11; v++ {
		fetch := func(le int32) kmsg.FetchResponseTopicPartition {
			req := fetchRequest(v, 0, 0, 1<<20, fetchPart{topic: topic})
			req.Topics[0].Partitions[0].CurrentLeaderEpoch = le
			return fetchedPartition(t, c.do(req).(*kmsg.FetchResponse), topic, 0)
		}
		wantCode(t, fmt.Sprintf("v%d current epoch", v), fetch(epoch).ErrorCode, 0)
		wantCode(t, fmt.Sprintf("v%d no epoch (-1)", v), fetch(-1).ErrorCode, 0)
		newer := fetch(epoch + 1)
		if v < 9 {
			wantCode(t, fmt.Sprintf("v%d newer epoch (not sent before v9)", v), newer.ErrorCode, 0)
			continue
		}
		wantCode(t, fmt.Sprintf("v%d newer epoch", v), newer.ErrorCode, kerr.UnknownLeaderEpoch.Code)
		if len(newer.RecordBatches) != 0 {
			t.Errorf("v%d: records sent with UNKNOWN_LEADER_EPOCH", v)
		}
		if epoch > 0 {
			wantCode(t, fmt.Sprintf("v%d older epoch", v), fetch(epoch-1).ErrorCode, kerr.FencedLeaderEpoch.Code)
		}
	}
}

func TestCheckLeaderEpoch(t *testing.T) {
	for _, tc := range []struct {
		theirs, ours int32
		want         int16
	}{
		{-1, 0, 0}, {-1, 7, 0}, {0, 0, 0}, {7, 7, 0},
		{6, 7, kerr.FencedLeaderEpoch.Code}, {0, 7, kerr.FencedLeaderEpoch.Code},
		{8, 7, kerr.UnknownLeaderEpoch.Code}, {1, 0, kerr.UnknownLeaderEpoch.Code},
	} {
		if got := kafkaapi.CheckLeaderEpoch(tc.theirs, tc.ours); got != tc.want {
			t.Errorf("client epoch %d, leader epoch %d: %s, want %s", tc.theirs, tc.ours, errName(got), errName(tc.want))
		}
	}
}

// TestFetchAcrossSegments reads a partition whose batches span many segment files, so
// one partition's records go out as several file ranges in one response.
func TestFetchAcrossSegments(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, map[string]string{"internal.segment.bytes": "300"})
	var want []string
	var sizes []int
	for i := range 20 {
		v := fmt.Sprintf("%02d-%s", i, strings.Repeat("s", 100+i*7))
		b := makeBatch(noProducer, v)
		mustProduce(t, c, topic, 0, b)
		want = append(want, v)
		sizes = append(sizes, len(b))
	}
	for _, v := range []int16{4, 11} {
		for _, from := range []int64{0, 7, 19} {
			resp := c.do(fetchRequest(v, 0, 0, 1<<20, fetchPart{topic: topic, offset: from})).(*kmsg.FetchResponse)
			_, recs := decodeBatches(t, fetchedPartition(t, resp, topic, 0).RecordBatches)
			if !slices.Equal(values(recs), want[from:]) || recs[0].offset != from {
				t.Fatalf("v%d from %d: %q, want %q", v, from, values(recs), want[from:])
			}
		}
		// A partition limit that ends inside the fifth segment stops after batch 4.
		limit := int32(sizes[0] + sizes[1] + sizes[2] + sizes[3] + sizes[4]/2)
		resp := c.do(fetchRequest(v, 0, 0, 1<<20, fetchPart{topic: topic, maxBytes: limit})).(*kmsg.FetchResponse)
		if _, recs := decodeBatches(t, fetchedPartition(t, resp, topic, 0).RecordBatches); !slices.Equal(values(recs), want[:4]) {
			t.Fatalf("v%d with partition_max_bytes %d: %q, want %q", v, limit, values(recs), want[:4])
		}
	}
}
