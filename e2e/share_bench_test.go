package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// BenchmarkShareConsume measures consuming one partition of 100,000 records of
// 100 bytes, every op a fresh group reading all of them once: a share group with 1
// and with 8 members (each record acquired, delivered and accepted; acceptances
// made durable in __share_group_state), against the baseline of a classic
// consumer group with one member (plain Fetch, no per-record state). records/s
// counts distinct records; the share runs also count deliveries (redeliveries
// after a lock ran out would show there). Each op includes joining the group.
//
//	go test ./e2e -run XXX -bench ShareConsume -benchtime 3x
func BenchmarkShareConsume(b *testing.B) {
	const records, size = 100_000, 100
	n := testnode.Start(b, "--group-initial-rebalance-delay", "0s") // the classic join does not wait 3 s
	createTopicB(b, n.Addr, "share-bench", 1)
	prod, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.DefaultProduceTopic("share-bench"), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	ctx := context.Background()
	for range records {
		prod.Produce(ctx, &kgo.Record{Value: make([]byte, size)}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	seq := 0
	run := func(b *testing.B, consume func(group string) int64) {
		b.SetBytes(records * size)
		var deliveries int64
		start := time.Now()
		for b.Loop() {
			seq++
			deliveries += consume(fmt.Sprintf("bench-%d", seq))
		}
		el := time.Since(start).Seconds()
		b.ReportMetric(float64(records)*float64(b.N)/el, "records/s")
		b.ReportMetric(float64(deliveries)/float64(records)/float64(b.N), "deliveries/record")
	}
	b.Run("classic-group-1", func(b *testing.B) {
		run(b, func(group string) int64 {
			cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics("share-bench"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			var got int64
			for got < records {
				got += int64(cl.PollFetches(ctx).NumRecords())
			}
			return got
		})
	})
	for _, members := range []int{1, 8} {
		b.Run(fmt.Sprintf("share-%d", members), func(b *testing.B) {
			run(b, func(group string) int64 {
				setShareGroupConfig(b, prod, group, "share.auto.offset.reset", "earliest")
				seen := make([]atomic.Bool, records)
				var distinct, deliveries atomic.Int64
				cctx, stop := context.WithCancel(ctx)
				defer stop()
				var wg sync.WaitGroup
				var cls []*kgo.Client
				for range members {
					cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.ShareGroup(group), kgo.ConsumeTopics("share-bench"))
					if err != nil {
						b.Fatal(err)
					}
					cls = append(cls, cl)
					wg.Add(1)
					go func() {
						defer wg.Done()
						for cctx.Err() == nil {
							fs := cl.PollFetches(cctx)
							fs.EachRecord(func(r *kgo.Record) {
								deliveries.Add(1)
								if !seen[r.Offset].Swap(true) && distinct.Add(1) == records {
									stop()
								}
							})
						}
					}()
				}
				wg.Wait()
				for _, cl := range cls {
					cl.Close()
				}
				return deliveries.Load()
			})
		})
	}
}
