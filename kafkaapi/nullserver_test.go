package kafkaapi

import (
	"context"
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
