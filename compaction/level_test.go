package compaction

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"skiff/internal/batch"
	"skiff/internal/batchtest"
	"skiff/internal/compress"
)

// TestRecompressAtTopicLevel: a batch the cleaner rebuilds is compressed at the
// topic's compression.<codec>.level when the topic's compression.type is the
// batch's codec (KIP-390), and at the codec library's default otherwise.
func TestRecompressAtTopicLevel(t *testing.T) {
	for _, c := range []struct {
		codec compress.Codec
		level int // one whose output differs from the library default's
	}{{compress.Gzip, 1}, {compress.LZ4, 9}, {compress.Zstd, 1}} {
		t.Run(c.codec.String(), func(t *testing.T) {
			for _, topicCodec := range []compress.Codec{c.codec, compress.None, compress.Snappy} {
				cfg := compactCfg()
				cfg.LevelCodec, cfg.Level = topicCodec, c.level
				want := "library default"
				if topicCodec == c.codec {
					want = "topic level"
				}
				if n := rebuiltAt(t, cfg, c.codec, c.level, want); n == 0 {
					t.Fatalf("topic codec %v: no batch was rebuilt", topicCodec)
				}
			}
		})
	}
}

// rebuiltAt compacts a log of codec batches of which the second half of every
// batch stays, checks that every rebuilt batch is compressed as want says
// ("topic level": at level, else at the library default), and returns how
// many batches were rebuilt.
func rebuiltAt(t *testing.T, cfg Config, codec compress.Codec, level int, want string) int {
	t.Helper()
	tg := newTarget(t, cfg)
	var h history
	val := randText(rand.New(rand.NewPCG(1, 2)), 200)
	now := time.Now()
	for round := range 2 {
		for b := range 20 {
			var kvs []batchtest.KV
			for i := range 10 - 5*round { // the second round overwrites keys 0-4
				kvs = append(kvs, batchtest.KV{Key: fmt.Appendf(nil, "key-%03d-%d", b, i), Value: append(fmt.Appendf(nil, "%d:", round), val...)})
			}
			tg.produce(t, &h, batchtest.Plain, now.UnixMilli(), codec, kvs...)
		}
	}
	tg.rollPast(t, &h, h[len(h)-1].offset, now.UnixMilli())
	if _, ok := tg.pass(t, newWorker(1<<20), now); !ok {
		t.Fatal("no pass")
	}
	checkCompacted(t, tg, h, false)
	rebuilt := 0
	for _, s := range tg.l.Segments() {
		if !s.Sealed {
			continue
		}
		err := tg.l.ScanSegment(s.Base, func(hd batch.Header, b []byte) error {
			if hd.Codec() != codec || int(hd.RecordCount) == int(hd.LastOffsetDelta)+1 {
				return nil // kept whole
			}
			rebuilt++
			raw, err := compress.Decompress(codec, nil, b[batch.HeaderSize:], batch.MaxDecompressed)
			if err != nil {
				return err
			}
			atLevel, err := compress.CompressLevel(codec, compress.Plain, level, nil, raw)
			if err != nil {
				return err
			}
			def, err := compress.Compress(codec, compress.Plain, nil, raw)
			if err != nil {
				return err
			}
			if bytes.Equal(atLevel, def) {
				t.Fatalf("%v at level %d compresses as at its default: the test cannot tell them apart", codec, level)
			}
			exp := def
			if want == "topic level" {
				exp = atLevel
			}
			if !bytes.Equal(b[batch.HeaderSize:], exp) {
				t.Fatalf("batch %d (%v): not compressed at the %s", hd.BaseOffset, codec, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return rebuilt
}
