package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// TestFranzRoundTrip produces 100,000 records over 6 partitions with franz-go's
// defaults (idempotent producer), with no compression and with lz4, and reads every
// one back, in order per partition, exactly once.
func TestFranzRoundTrip(t *testing.T) {
	n := testnode.Start(t)
	for _, codec := range []struct {
		name  string
		codec kgo.CompressionCodec
	}{{"none", kgo.NoCompression()}, {"lz4", kgo.Lz4Compression()}} {
		t.Run(codec.name, func(t *testing.T) {
			topic := "round-trip-" + codec.name
			createTopic(t, n.Addr, topic, 6)
			const total = 100_000
			prod := newClient(t, n.Addr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec.codec))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			errs := make(chan error, 1)
			for i := range total {
				r := &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i%60)), Value: []byte(fmt.Sprintf("v%07d", i))}
				prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
					if err != nil {
						select {
						case errs <- err:
						default:
						}
					}
				})
			}
			if err := prod.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-errs:
				t.Fatalf("produce: %v", err)
			default:
			}

			cons := newClient(t, n.Addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			// Records of one key go to one partition in produce order, so per key
			// the values must come back strictly increasing, each once.
			last := make(map[string]int)
			seen := 0
			for seen < total {
				fs := cons.PollFetches(ctx)
				if err := ctx.Err(); err != nil {
					t.Fatalf("consumed %d of %d: %v", seen, total, err)
				}
				fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
				fs.EachRecord(func(r *kgo.Record) {
					var v int
					fmt.Sscanf(string(r.Value), "v%d", &v)
					if prev, ok := last[string(r.Key)]; ok && v <= prev {
						t.Fatalf("key %s: value %d after %d (duplicate or out of order)", r.Key, v, prev)
					}
					last[string(r.Key)] = v
					seen++
				})
			}
			if seen != total {
				t.Fatalf("consumed %d records, want %d", seen, total)
			}
		})
	}
}
