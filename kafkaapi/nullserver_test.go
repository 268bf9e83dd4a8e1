package kafkaapi

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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
