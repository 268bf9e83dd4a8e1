package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestNullServer: franz-go's idempotent producer creates a topic on a NullServer
// and produces to it; every record gets the next offset of its partition, the
// bytes land in the files, and Close removes them.
func TestNullServer(t *testing.T) {
	dir := t.TempDir()
	s, err := StartNullServer(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr()), kgo.DefaultProduceTopic("null"), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "null"); err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "null"); err == nil {
		t.Fatal("creating the topic twice succeeded")
	}
	const n = 3000
	next := map[int32]int64{}
	for i := range n {
		r := &kgo.Record{Value: make([]byte, 100), Partition: int32(i % 3)}
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				t.Errorf("record %d: %v", i, err)
				return
			}
			if r.Offset != next[r.Partition] {
				t.Errorf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition] = r.Offset + 1
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		if next[p] != n/3 {
			t.Errorf("partition %d: %d records acknowledged, want %d", p, next[p], n/3)
		}
	}
	var written int64
	for _, p := range s.topics["null"] {
		written += p.end
	}
	if written < n*100 {
		t.Errorf("files hold %d bytes, less than the %d bytes of values", written, n*100)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
		t.Errorf("Close left %v", left)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}

// TestNullServerBadProduce: records that are not batches, and partitions or topics
// that do not exist, get their Kafka error codes, and nothing is written.
func TestNullServerBadProduce(t *testing.T) {
	s, err := StartNullServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "null"); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 1000
	for _, tp := range []struct {
		topic     string
		partition int32
		records   []byte
	}{{"null", 0, []byte("not a record batch at all, but long enough to be parsed as one")}, {"null", 5, nil}, {"missing", 0, nil}} {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = tp.topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = tp.partition, tp.records
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	want := []int16{kerr.CorruptMessage.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code}
	for i, rt := range resp.Topics {
		if got := rt.Partitions[0].ErrorCode; got != want[i] {
			t.Errorf("%s-%d: error %d, want %d", rt.Topic, rt.Partitions[0].Partition, got, want[i])
		}
	}
	if end := s.topics["null"][0].end; end != 0 {
		t.Errorf("%d bytes written for refused records", end)
	}
}

// TestNullServerConsume: what a producer wrote to a NullServer, a consumer reads
// back from the start, every record once, in order, at its offset; ListOffsets
// says where the partitions end; a fetch with a small partition_max_bytes still
// gets one whole batch (only the first partition with data may exceed it), and
// an offset past the end is OFFSET_OUT_OF_RANGE.
func TestNullServerConsume(t *testing.T) {
	s, err := StartNullServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr()), kgo.DefaultProduceTopic("null"),
		kgo.ProducerBatchMaxBytes(16<<10), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "null"); err != nil {
		t.Fatal(err)
	}
	const n = 4000
	for i := range n {
		r := &kgo.Record{Value: []byte(fmt.Sprintf("record %d %0200d", i, i)), Partition: int32(i % 2)}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("record %d: %v", i, err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "null")
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != n/2 {
			t.Errorf("partition %d: end offset %d (%v), want %d", o.Partition, o.Offset, o.Err, n/2)
		}
	})

	starts, err := adm.ListStartOffsets(ctx, "null")
	if err != nil {
		t.Fatal(err)
	}
	starts.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != 0 {
			t.Errorf("partition %d: start offset %d (%v), want 0", o.Partition, o.Offset, o.Err)
		}
	})

	cons, err := kgo.NewClient(kgo.SeedBrokers(s.Addr()), kgo.FetchMaxPartitionBytes(1),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"null": {0: kgo.NewOffset().At(0), 1: kgo.NewOffset().At(0)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	next := map[int32]int64{}
	for got := 0; got < n; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("after %d records: %v", got, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			i := int(r.Offset)*2 + int(r.Partition)
			if r.Offset != next[r.Partition] || string(r.Value) != fmt.Sprintf("record %d %0200d", i, i) {
				t.Fatalf("partition %d: offset %d value %.20q, want offset %d", r.Partition, r.Offset, r.Value, next[r.Partition])
			}
			next[r.Partition]++
			got++
		})
	}

	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes = 0, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "null"
	for _, fetch := range []struct {
		partition int32
		offset    int64
	}{{0, n/2 + 1}, {0, 7}, {1, 0}} {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = fetch.partition, fetch.offset, 1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cons)
	if err != nil {
		t.Fatal(err)
	}
	past, mid, second := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1], resp.Topics[0].Partitions[2]
	if second.ErrorCode != 0 || len(second.RecordBatches) != 0 {
		t.Errorf("second partition with data, over its limit: error %d, %d record bytes; want none (KIP-74)", second.ErrorCode, len(second.RecordBatches))
	}
	if past.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Errorf("fetch past the end: error %d, want OFFSET_OUT_OF_RANGE", past.ErrorCode)
	}
	if mid.ErrorCode != 0 || mid.HighWatermark != n/2 {
		t.Fatalf("fetch at 7: error %d, high watermark %d", mid.ErrorCode, mid.HighWatermark)
	}
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "null", Partition: 0, Offset: 7}, &mid, kgo.DefaultDecompressor(), nil)
	if fp.Err != nil || len(fp.Records) == 0 || fp.Records[0].Offset != 7 {
		t.Fatalf("fetch at 7 with partition_max_bytes 1: %d records from %v (%v), want one batch from 7", len(fp.Records), firstOffset(fp.Records), fp.Err)
	}
}

func firstOffset(rs []*kgo.Record) any {
	if len(rs) == 0 {
		return "none"
	}
	return rs[0].Offset
}
