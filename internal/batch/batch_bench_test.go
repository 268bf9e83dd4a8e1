package batch_test

import (
	"fmt"
	"hash/crc32"
	"testing"

	"skiff/internal/batch"
	"skiff/internal/batchtest"
	"skiff/internal/compress"
)

// benchSizes are whole-batch sizes from a lone record to a full default
// max.message.bytes batch.
var benchSizes = []struct {
	name  string
	bytes int
}{{"1KiB", 1 << 10}, {"16KiB", 16 << 10}, {"256KiB", 256 << 10}, {"1MiB", 1 << 20}}

// benchBatch builds a valid batch of about size bytes from 1 KiB records (one
// smaller record for the 1 KiB size), as a producer of 1 KiB records sends them.
func benchBatch(tb testing.TB, size int) []byte {
	tb.Helper()
	val := func(n int) []byte {
		v := make([]byte, n)
		for i := range v {
			v[i] = byte('a' + (i*7+i/13)%26)
		}
		return v
	}
	var vals [][]byte
	if size <= 1<<10 {
		vals = [][]byte{val(size - 80)}
	} else {
		for range size >> 10 {
			vals = append(vals, val(1024-10))
		}
	}
	b := batchtest.Build(batchtest.Producer{ID: 1, Epoch: 0, Sequence: 0}, 1_700_000_000_000, vals...)
	if _, err := batch.Check(b); err != nil {
		tb.Fatal(err)
	}
	if len(b) < size*9/10 || len(b) > size*11/10 {
		tb.Fatalf("batch of %d bytes for size %d", len(b), size)
	}
	return b
}

// BenchmarkCheck measures batch.Check, the broker's whole validation of a
// produced batch, next to the bare CRC32C over the same bytes: the difference
// is the cost of the header checks.
func BenchmarkCheck(b *testing.B) {
	table := crc32.MakeTable(crc32.Castagnoli)
	for _, size := range benchSizes {
		bb := benchBatch(b, size.bytes)
		b.Run(size.name+"/check", func(b *testing.B) {
			b.SetBytes(int64(len(bb)))
			for b.Loop() {
				if _, err := batch.Check(bb); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(size.name+"/crc32c", func(b *testing.B) {
			want := batch.CRC(bb)
			b.SetBytes(int64(len(bb)))
			for b.Loop() {
				if crc32.Checksum(bb[21:], table) != want {
					b.Fatal("crc mismatch")
				}
			}
		})
	}
}

// BenchmarkSplit measures batch.Split over 1 MiB of batches back to back, as a
// follower checks what it fetched, for several batch sizes.
func BenchmarkSplit(b *testing.B) {
	for _, size := range benchSizes[:3] {
		one := benchBatch(b, size.bytes)
		var run []byte
		for len(run)+len(one) <= 1<<20 {
			run = append(run, one...)
		}
		want := len(run) / len(one)
		b.Run(fmt.Sprintf("batches%s", size.name), func(b *testing.B) {
			b.SetBytes(int64(len(run)))
			for b.Loop() {
				n := 0
				if err := batch.Split(run, func(batch.Header, []byte) error { n++; return nil }); err != nil {
					b.Fatal(err)
				}
				if n != want {
					b.Fatalf("split %d batches, want %d", n, want)
				}
			}
		})
	}
}

// BenchmarkKeys walks the keys of a batch of 100 records with 13-byte keys and
// 100-byte values, uncompressed: what the cleaner's key map pass reads of every
// batch of a log.
func BenchmarkKeys(b *testing.B) {
	kvs := make([]batchtest.KV, 100)
	for i := range kvs {
		kvs[i] = batchtest.KV{Key: fmt.Appendf(nil, "key-%09d", i), Value: make([]byte, 100)}
	}
	bb := batchtest.Keyed(batchtest.Plain, 1, compress.None, false, kvs...)
	var d batch.Decoder
	b.SetBytes(int64(len(bb)))
	for b.Loop() {
		n := 0
		err := d.Keys(bb, func(key []byte, offset int64) error {
			n += len(key)
			return nil
		})
		if err != nil || n != 13*len(kvs) {
			b.Fatalf("%d key bytes, %v", n, err)
		}
	}
}
