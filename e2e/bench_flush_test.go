package e2e

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// BenchmarkProduceFlushPolicy compares produce throughput under each flush.policy
// on the same node in the same run: 1 KiB records, franz-go's defaults
// (idempotent, acks=all), 6 partitions of one replica, data directory in the test's
// temporary folder (so on its filesystem: put TMPDIR on a real disk).
//
//	go test ./e2e -run XXX -bench ProduceFlushPolicy -benchtime 100000x
func BenchmarkProduceFlushPolicy(b *testing.B) {
	n := testnode.Start(b)
	value := benchValue()
	for _, policy := range []string{"replicated", "always", "interval"} {
		b.Run(policy, func(b *testing.B) {
			topic := fmt.Sprintf("flush-%s-%d", policy, benchTopics.Add(1))
			createTopicConfigs(b, n.Addr, topic, 6, map[string]string{"flush.policy": policy})
			cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
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
		})
	}
}

// createTopicConfigs creates a topic of one replica with configs and waits until
// every partition has a leader.
func createTopicConfigs(tb testing.TB, addr, topic string, partitions int32, configs map[string]string) {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := map[string]*string{}
	for k, v := range configs {
		cs[k] = &v
	}
	resp, err := adm.CreateTopic(ctx, partitions, 1, cs, topic)
	if err != nil || resp.Err != nil {
		tb.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
	}
	for {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			tb.Fatal(err)
		}
		ready := len(md.Topics[topic].Partitions) == int(partitions)
		for _, p := range md.Topics[topic].Partitions {
			ready = ready && p.Leader >= 0
		}
		if ready {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("partitions of %s have no leader", topic)
		case <-time.After(50 * time.Millisecond): // polling a condition with a deadline
		}
	}
}
