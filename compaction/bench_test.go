package compaction

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"skiff/internal/batch"
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

// BenchmarkPassPhases times the two CPU phases of a pass over one log of
// SKIFF_BENCH_KEYS keys (default 200,000) written 10 times in batches of
// SKIFF_BENCH_BATCH (default 100) records of 100-byte values, uncompressed,
// without writing anything: "map"
// builds the key map over it, "filter" decides what of every batch stays (the
// map built once). The log is filled once; its bytes per second are bytes of
// log read.
func BenchmarkPassPhases(b *testing.B) {
	keys := 200_000
	if s := os.Getenv("SKIFF_BENCH_KEYS"); s != "" {
		var err error
		if keys, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	perBatch := 100
	if s := os.Getenv("SKIFF_BENCH_BATCH"); s != "" {
		var err error
		if perBatch, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	const rounds = 10
	cfg := compactCfg()
	cfg.SegmentBytes = 1 << 30
	tg := newTargetSized(b, cfg, 1<<30)
	rng := rand.New(rand.NewPCG(1, 1))
	val := randText(rng, 100)
	kvs := make([]batchtest.KV, perBatch)
	for round := range rounds {
		for k := 0; k < keys; k += perBatch {
			for i := range kvs {
				kvs[i] = batchtest.KV{Key: fmt.Appendf(nil, "key-%09d", k+i), Value: append(fmt.Appendf(nil, "%d:", round), val...)}
			}
			if _, err := tg.l.Append(batchtest.Keyed(batchtest.Plain, 1, compress.None, false, kvs...), 1); err != nil {
				b.Fatal(err)
			}
		}
	}
	var h history
	tg.produce(b, &h, batchtest.Plain, 8*24*3600*1000, compress.None, batchtest.KV{Key: []byte("roll"), Value: []byte("r")})
	tg.seal(b)
	now := time.Now()
	sp := planSpan(tg.l.Segments(), tg.l.LogStartOffset(), tg.l.CleanerPoint(), tg.HighWatermark(), cfg, now)
	w := newWorker(128 << 20)
	var st passStats
	if err := w.buildMap(context.Background(), tg.l, sp, &st); err != nil {
		b.Fatal(err)
	}
	b.Run("map", func(b *testing.B) {
		b.SetBytes(st.bytesRead)
		defer reportCPU(b)()
		for range b.N {
			var st passStats
			if err := w.buildMap(context.Background(), tg.l, sp, &st); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("filter", func(b *testing.B) {
		b.SetBytes(st.bytesRead)
		end := sp.segs[len(sp.segs)-1].Next
		defer reportCPU(b)()
		for range b.N {
			var st passStats
			for _, s := range sp.segs {
				err := tg.l.ScanSegmentSkipping(s.Base, w.dropsWhole, func(h batch.Header, bb []byte) error {
					_, err := w.filter(&h, bb, end, cfg, tg.producers, now, &st)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			if st.recordsOut != int64(keys) {
				b.Fatalf("kept %d records, want %d", st.recordsOut, keys)
			}
		}
	})
}

// reportCPU starts counting the CPU time of the process (all threads) and
// returns a func that reports it per op as cpu-ns/op: on a machine shared with
// other work, wall time moves with its load while CPU time moves much less.
func reportCPU(b *testing.B) func() {
	start := cpuTime(b)
	return func() { b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op") }
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
