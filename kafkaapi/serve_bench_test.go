package kafkaapi_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkServe is a profiling harness: a whole node in this process (the same
// appliance that skiff serve runs, default settings) driven by franz-go with the
// targets' workload, 1 KiB records over 6 partitions, acks=all, no compression.
// The node has no pprof endpoint yet; this gives its profile:
//
//	go test ./kafkaapi -run '^$' -bench Serve -benchtime 300000x -cpuprofile cpu.out
//	go tool pprof -top -focus 'kafkaapi|replication|logstore|appliance' cpu.out
//
// The client runs in the same process, so the profile holds both sides; focus on
// the server's packages (or ignore kgo) to read the broker's share. produce and
// then fetch of the same records run as sub-benchmarks.
func BenchmarkServe(b *testing.B) {
	n, err := startNode(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := n.Close(); err != nil {
			b.Error(err)
		}
	})
	topic := fmt.Sprintf("serve-bench-%d", time.Now().UnixNano())
	adm, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		b.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, 6, 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 1024)
	for i := range value {
		value[i] = byte('a' + (i*7+i/13)%26)
	}
	var produced atomic.Int64
	b.Run("produce", func(b *testing.B) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.DefaultProduceTopic(topic),
			kgo.ProducerBatchCompression(kgo.NoCompression()))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		var failed atomic.Int64
		var first atomic.Value
		b.SetBytes(int64(len(value)))
		for b.Loop() {
			cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
					first.CompareAndSwap(nil, err)
					return
				}
				produced.Add(1)
			})
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		if f := failed.Load(); f > 0 {
			b.Fatalf("%d records failed, first: %v", f, first.Load())
		}
	})
	b.Run("fetch", func(b *testing.B) {
		total := produced.Load()
		if total == 0 {
			b.Skip("nothing produced")
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		// Each iteration reads one record; at the end of what was produced, the
		// consumer starts over from the beginning.
		rewind := make(map[int32]kgo.EpochOffset)
		for p := range int32(6) {
			rewind[p] = kgo.EpochOffset{Epoch: -1, Offset: 0}
		}
		b.SetBytes(int64(len(value)))
		var buffered, consumed int64
		for b.Loop() {
			for buffered == 0 {
				if consumed == total {
					cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: rewind})
					consumed = 0
				}
				fs := cl.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					b.Fatal(err)
				}
				buffered = int64(fs.NumRecords())
				consumed += buffered
			}
			buffered--
		}
	})
}
