package compaction

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"skiff/internal/batchtest"
	"skiff/internal/compress"
)

// BenchmarkClean compacts a log of keys written over rounds times, one pass per
// iteration, in batches of 100 records of 100-byte values; its bytes per second
// are bytes of log compacted.
func BenchmarkClean(b *testing.B) {
	for _, c := range []compress.Codec{compress.None, compress.LZ4} {
		b.Run(c.String(), func(b *testing.B) {
			const keys, rounds, perBatch = 20_000, 10, 100
			rng := rand.New(rand.NewPCG(1, 1))
			val := randText(rng, 100)
			var batches [][]byte
			for round := range rounds {
				for k := 0; k < keys; k += perBatch {
					var kvs []batchtest.KV
					for i := k; i < k+perBatch; i++ {
						kvs = append(kvs, batchtest.KV{Key: fmt.Appendf(nil, "key-%09d", i), Value: append(fmt.Appendf(nil, "%d:", round), val...)})
					}
					batches = append(batches, batchtest.Keyed(batchtest.Plain, 1, c, false, kvs...))
				}
			}
			var size int64
			for _, bb := range batches {
				size += int64(len(bb))
			}
			cfg := compactCfg()
			cfg.SegmentBytes = 1 << 30
			b.SetBytes(size)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				tg := newTargetSized(b, cfg, 1<<30)
				for _, bb := range batches {
					if _, err := tg.l.Append(append([]byte(nil), bb...), 1); err != nil {
						b.Fatal(err)
					}
				}
				// A batch 8 days younger rolls the segment (segment.ms: 7 days).
				var h history
				tg.produce(b, &h, batchtest.Plain, 8*24*3600*1000, compress.None, batchtest.KV{Key: []byte("roll"), Value: []byte("r")})
				tg.seal(b)
				w := newWorker(128 << 20)
				b.StartTimer()
				if _, ok := tg.pass(b, w, time.Now()); !ok {
					b.Fatal("no pass")
				}
			}
		})
	}
}
