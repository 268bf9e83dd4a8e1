package e2e

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// BenchmarkProduceConsume1KiB measures a real skiff serve process with franz-go's
// defaults (idempotent producer, acks=all, no compression), 1 KiB records over 6
// partitions: produce throughput, then consume throughput of the same records.
//
//	go test ./e2e -run XXX -bench ProduceConsume -benchtime 200000x
func BenchmarkProduceConsume1KiB(b *testing.B) {
	n := testnode.Start(b)
	value := benchValue()
	topic := fmt.Sprintf("bench-%d", b.N)
	createTopicB(b, n.Addr, topic, 6)
	b.Run("produce", func(b *testing.B) {
		produceAll(b, n.Addr, topic, value)
	})
	b.Run("consume", func(b *testing.B) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		b.SetBytes(int64(len(value)))
		b.ResetTimer()
		for seen := 0; seen < b.N; {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				b.Fatalf("consumed %d of %d: %v", seen, b.N, err)
			}
			seen += fs.NumRecords()
		}
	})
}

// BenchmarkProduceRF compares produce throughput of RF 1 and RF 3 (acks=all,
// min.insync.replicas 2) on the same three local nodes in the same run: 1 KiB
// records, franz-go defaults, 6 partitions.
//
//	go test ./e2e -run XXX -bench ProduceRF -benchtime 100000x
func BenchmarkProduceRF(b *testing.B) {
	nodes := testnode.StartCluster(b, 3)
	value := benchValue()
	for _, rf := range []int16{1, 3} {
		b.Run(fmt.Sprintf("rf%d", rf), func(b *testing.B) {
			topic := fmt.Sprintf("rf%d-%d", rf, benchTopics.Add(1)) // each round its own topic
			createTopicRF(b, nodes[0].Addr, topic, 6, rf)
			produceAll(b, nodes[0].Addr, topic, value)
		})
	}
}

var benchTopics atomic.Int64

// produceAll produces b.N records of value to topic with franz-go's defaults (no
// compression) as the timed part of a benchmark, and fails it if any record fails.
func produceAll(b *testing.B, addr, topic string, value []byte) {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	var failed atomic.Int64
	b.SetBytes(int64(len(value)))
	b.ResetTimer()
	for range b.N {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d records failed", f)
	}
}

// benchValue is a 1 KiB record value that does not compress to nothing.
func benchValue() []byte {
	v := make([]byte, 1024)
	for i := range v {
		v[i] = byte('a' + (i*7+i/13)%26)
	}
	return v
}
