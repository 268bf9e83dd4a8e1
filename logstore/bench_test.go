package logstore_test

import (
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"skiff/logstore"
)

// BenchmarkAppend measures Append (page cache, no Sync) with the Pebble index,
// next to the baseline of plain file writes of the same sizes.
func BenchmarkAppend(b *testing.B) {
	for _, size := range []struct {
		name  string
		bytes int
	}{{"1KiB", 1 << 10}, {"16KiB", 16 << 10}, {"256KiB", 256 << 10}, {"1MiB", 1 << 20}} {
		batch := makeBatch(b, 1, size.bytes-batchOverheadFor1Record(b, size.bytes), 1)
		b.Run(size.name+"/log", func(b *testing.B) {
			env := newPebbleEnv(b)
			l := openLog(b, b.TempDir(), logstore.Config{RetentionMs: -1}, env.Index())
			defer closeLog(b, l)
			b.SetBytes(int64(len(batch)))
			b.ResetTimer()
			for range b.N {
				if _, err := l.Append(batch, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(size.name+"/raw-write", func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			b.SetBytes(int64(len(batch)))
			b.ResetTimer()
			for range b.N {
				if _, err := f.Write(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// batchOverheadFor1Record is the bytes a one-record batch adds to its value.
func batchOverheadFor1Record(tb testing.TB, size int) int {
	return len(makeBatch(tb, 1, size, 1)) - size
}

// BenchmarkRead measures Read+Release of a random offset (range lookup only, no
// data copied) on a 64 MiB log of 1 KiB batches in 16 MiB segments.
func BenchmarkRead(b *testing.B) {
	env := newPebbleEnv(b)
	l := openLog(b, b.TempDir(), logstore.Config{SegmentBytes: 16 << 20, RetentionMs: -1}, env.Index())
	defer closeLog(b, l)
	one := makeBatch(b, 1, 1024-batchOverheadFor1Record(b, 1024), 1)
	for range 64 << 10 {
		if _, err := l.Append(one, 1); err != nil {
			b.Fatal(err)
		}
	}
	end := l.LogEndOffset()
	for _, maxBytes := range []int64{1 << 10, 64 << 10, 1 << 20} {
		b.Run(byteName(maxBytes), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			var total int64
			b.ResetTimer()
			for range b.N {
				s, err := l.Read(rng.Int64N(end), maxBytes, math.MaxInt64)
				if err != nil {
					b.Fatal(err)
				}
				if s.Bytes == 0 {
					b.Fatal("empty read")
				}
				total += s.Bytes
				s.Release()
			}
			b.SetBytes(total / int64(b.N))
		})
	}
	b.Run("tail", func(b *testing.B) { // a caught-up consumer: the last few batches
		for range b.N {
			s, err := l.Read(end-3, 1<<20, math.MaxInt64)
			if err != nil {
				b.Fatal(err)
			}
			if s.Bytes == 0 {
				b.Fatal("empty read")
			}
			s.Release()
		}
	})
}

func byteName(n int64) string {
	switch {
	case n >= 1<<20:
		return "max" + itoa(n>>20) + "MiB"
	default:
		return "max" + itoa(n>>10) + "KiB"
	}
}

func itoa(n int64) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// BenchmarkReadSealedFiles reads 64 KiB at random offsets of a log of 32 sealed
// segments and copies the bytes out, through a segment file cache that holds
// every file (each Read finds its file open) and through one that holds a
// single file (nearly every Read opens its file again): the cost of a cache
// miss on the read path.
func BenchmarkReadSealedFiles(b *testing.B) {
	for _, c := range []struct {
		name     string
		capacity int
	}{{"cache-all", 64}, {"cache-1", 1}} {
		b.Run(c.name, func(b *testing.B) {
			cache := logstore.NewFileCache(c.capacity)
			l := openLog(b, b.TempDir(), logstore.Config{SegmentBytes: 1 << 20, RetentionMs: -1, Files: cache}, logstore.NewMemIndex())
			defer closeLog(b, l)
			one := makeBatch(b, 1, 1024-batchOverheadFor1Record(b, 1024), 1)
			for range 32 << 10 {
				if _, err := l.Append(one, 1); err != nil {
					b.Fatal(err)
				}
			}
			if err := l.Sync(); err != nil {
				b.Fatal(err)
			}
			end := l.LogEndOffset()
			rng := rand.New(rand.NewPCG(1, 1))
			var total int64
			b.ResetTimer()
			for range b.N {
				s, err := l.Read(rng.Int64N(end), 64<<10, math.MaxInt64)
				if err != nil {
					b.Fatal(err)
				}
				n, err := s.WriteTo(io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				total += n
				s.Release()
			}
			b.SetBytes(total / int64(b.N))
			b.ReportMetric(float64(cache.Reopened())/float64(b.N), "reopens/op")
		})
	}
}
