package batch_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"skiff/internal/batch"
	"skiff/internal/batchtest"
	"skiff/internal/compress"
)

var allCodecs = []compress.Codec{compress.None, compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd}

// compressed returns a batch of values with its records compressed by c.
func compressed(t *testing.T, c compress.Codec, values ...string) []byte {
	t.Helper()
	plain := batchtest.Strings(batchtest.Producer{ID: 7, Epoch: 2, Sequence: 10}, 1000, values...)
	b, err := batch.Recompress(plain, c, compress.DefaultLevel(c), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRecompress turns batches of every codec into every other: the result
// checks, keeps the header but codec, length and CRC, and holds the same records.
func TestRecompress(t *testing.T) {
	values := []string{"a", string(bytes.Repeat([]byte("compressible "), 500)), "", "last"}
	want := batchtest.Strings(batchtest.Producer{ID: 7, Epoch: 2, Sequence: 10}, 1000, values...)
	for _, from := range allCodecs {
		src := compressed(t, from, values...)
		for _, to := range allCodecs {
			got, err := batch.Recompress(src, to, compress.DefaultLevel(to), 1<<20)
			if err != nil {
				t.Fatalf("%v to %v: %v", from, to, err)
			}
			h, err := batch.Check(got)
			if err != nil {
				t.Fatalf("%v to %v: %v", from, to, err)
			}
			w, _ := batch.Check(want)
			if codec := compress.Codec(h.Attributes & batch.AttrCompressionMask); codec != to {
				t.Fatalf("%v to %v: codec %v", from, to, codec)
			}
			if h.ProducerID != w.ProducerID || h.BaseSequence != w.BaseSequence || h.MaxTimestamp != w.MaxTimestamp ||
				h.RecordCount != w.RecordCount || h.Attributes&^batch.AttrCompressionMask != w.Attributes {
				t.Fatalf("%v to %v: header %+v, want that of %+v", from, to, h, w)
			}
			back, err := batch.Recompress(got, compress.None, compress.DefaultLevel(compress.None), 1<<20)
			if err != nil || !bytes.Equal(back, want) {
				t.Fatalf("%v to %v and back to none: %v, equal %v", from, to, err, bytes.Equal(back, want))
			}
			if from == to && &got[0] != &src[0] {
				t.Fatalf("%v to itself: a copy", from)
			}
		}
	}
	big := compressed(t, compress.Zstd, values...)
	if _, err := batch.Recompress(big, compress.Gzip, compress.DefaultLevel(compress.Gzip), 100); !errors.Is(err, compress.ErrTooLarge) {
		t.Fatalf("over the limit: %v", err)
	}
	bad := compressed(t, compress.LZ4, values...)
	binary.BigEndian.PutUint32(bad[batch.HeaderSize:], 0xdeadbeef) // not an lz4 frame any more
	if _, err := batch.Recompress(bad, compress.None, compress.DefaultLevel(compress.None), 1<<20); !errors.Is(err, compress.ErrCorrupt) {
		t.Fatalf("corrupt lz4: %v", err)
	}
}

// BenchmarkRecompress: the broker's cost of compression.type per produced batch of
// 16 KiB of records, from an uncompressed batch to each codec and back.
func BenchmarkRecompress(b *testing.B) {
	var values []string
	for i := range 160 {
		values = append(values, fmt.Sprintf("record %04d: %s", i, bytes.Repeat([]byte("payload "), 12)))
	}
	plain := batchtest.Strings(batchtest.Producer{ID: -1, Epoch: -1, Sequence: -1}, 1000, values...)
	for _, to := range allCodecs[1:] {
		for _, dir := range []string{"to", "from"} {
			src, c := plain, to
			if dir == "from" {
				var err error
				if src, err = batch.Recompress(plain, to, compress.DefaultLevel(to), 1<<20); err != nil {
					b.Fatal(err)
				}
				c = compress.None
			}
			b.Run(fmt.Sprintf("%s-%v", dir, to), func(b *testing.B) {
				b.SetBytes(int64(len(plain)))
				for range b.N {
					if _, err := batch.Recompress(src, c, compress.DefaultLevel(c), 1<<20); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
