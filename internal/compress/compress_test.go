package compress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/twmb/franz-go/pkg/kgo"
)

var codecs = []Codec{None, Gzip, Snappy, LZ4, Zstd}

func sample(n int) []byte {
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefgh"[rng.IntN(8)] // compressible, not trivially
	}
	return b
}

// TestRoundTrip: every codec and format decompresses what it compressed, for
// empty, small and multi-block inputs, appending to what dst held.
func TestRoundTrip(t *testing.T) {
	for _, c := range codecs {
		for _, f := range []Format{Plain, Xerial} {
			if f == Xerial && c != Snappy {
				continue
			}
			for _, n := range []int{0, 1, 100, 70 << 10, 300 << 10} {
				t.Run(fmt.Sprintf("%s-%d-%d", c, f, n), func(t *testing.T) {
					src := sample(n)
					z, err := Compress(c, f, []byte("prefix"), src)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.HasPrefix(z, []byte("prefix")) {
						t.Fatal("Compress dropped what dst held")
					}
					z = z[len("prefix"):]
					if got := FormatOf(c, z); got != f {
						t.Fatalf("FormatOf = %d, want %d", got, f)
					}
					out, err := Decompress(c, []byte("dst"), z, n+1)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(out, append([]byte("dst"), src...)) {
						t.Fatalf("round trip differs: %d bytes back, %d in", len(out)-3, n)
					}
				})
			}
		}
	}
}

// TestClientCodecs: records compressed by franz-go's compressors (the client
// most tests produce with) decompress here, including xerial snappy as Java
// clients write it (built by hand: franz-go writes raw blocks).
func TestClientCodecs(t *testing.T) {
	src := sample(200 << 10)
	for _, tc := range []struct {
		codec kgo.CompressionCodec
		c     Codec
	}{
		{kgo.GzipCompression(), Gzip}, {kgo.SnappyCompression(), Snappy},
		{kgo.Lz4Compression(), LZ4}, {kgo.ZstdCompression(), Zstd},
	} {
		comp, err := kgo.DefaultCompressor(tc.codec)
		if err != nil {
			t.Fatal(err)
		}
		z, _ := comp.Compress(new(bytes.Buffer), src)
		out, err := Decompress(tc.c, nil, z, len(src))
		if err != nil || !bytes.Equal(out, src) {
			t.Fatalf("%s from franz-go: %v (%d bytes back)", tc.c, err, len(out))
		}
		// And franz-go reads what Compress writes.
		ours, err := Compress(tc.c, Plain, nil, src)
		if err != nil {
			t.Fatal(err)
		}
		back, err := kgo.DefaultDecompressor().Decompress(ours, kgo.CompressionCodecType(tc.c))
		if err != nil || !bytes.Equal(back, src) {
			t.Fatalf("%s to franz-go: %v", tc.c, err)
		}
	}
	// Xerial as the Java client frames it: header, then length-prefixed blocks.
	x := append([]byte(nil), xerialHeader...)
	for _, part := range [][]byte{src[:1000], src[1000:]} {
		blk := snappy.Encode(nil, part)
		x = binary.BigEndian.AppendUint32(x, uint32(len(blk)))
		x = append(x, blk...)
	}
	out, err := Decompress(Snappy, nil, x, len(src))
	if err != nil || !bytes.Equal(out, src) {
		t.Fatalf("xerial: %v", err)
	}
	back, err := kgo.DefaultDecompressor().Decompress(compressXerial(nil, src), kgo.CodecSnappy)
	if err != nil || !bytes.Equal(back, src) {
		t.Fatalf("xerial to franz-go: %v", err)
	}
}

// TestLimit: output over the limit is ErrTooLarge for every codec, and exactly
// the limit is fine.
func TestLimit(t *testing.T) {
	src := bytes.Repeat([]byte("z"), 1<<20) // compresses to almost nothing
	for _, c := range codecs {
		for _, f := range []Format{Plain, Xerial} {
			if f == Xerial && c != Snappy {
				continue
			}
			z, err := Compress(c, f, nil, src)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Decompress(c, nil, z, len(src)-1); !errors.Is(err, ErrTooLarge) {
				t.Errorf("%s/%d: limit below the size: %v, want ErrTooLarge", c, f, err)
			}
			if out, err := Decompress(c, nil, z, len(src)); err != nil || len(out) != len(src) {
				t.Errorf("%s/%d: limit at the size: %v", c, f, err)
			}
		}
	}
}

// TestCorrupt: damaged input is an error wrapping ErrCorrupt (or ErrTooLarge),
// never a panic; an unknown codec is ErrCodec.
func TestCorrupt(t *testing.T) {
	src := sample(10 << 10)
	for _, c := range codecs[1:] {
		z, err := Compress(c, Plain, nil, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range [][]byte{nil, z[:len(z)/2], append([]byte{0xff, 0xff}, z...)} {
			if _, err := Decompress(c, nil, bad, 1<<20); err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
				t.Errorf("%s: %v does not wrap ErrCorrupt", c, err)
			}
		}
	}
	if _, err := Decompress(Codec(5), nil, src, 1<<20); !errors.Is(err, ErrCodec) {
		t.Errorf("codec 5: %v", err)
	}
	if _, err := Decompress(Snappy, nil, append(append([]byte(nil), xerialHeader...), 0, 0, 9), 100); !errors.Is(err, ErrCorrupt) {
		t.Errorf("xerial with a cut length: %v", err)
	}
}

// FuzzDecompress: arbitrary bytes under every codec never panic, never return
// more than the limit, and fail only with ErrCorrupt or ErrTooLarge; what does
// decode compresses and decodes back to itself.
func FuzzDecompress(f *testing.F) {
	for _, c := range codecs {
		z, _ := Compress(c, Plain, nil, []byte("hello hello hello"))
		f.Add(int8(c), z)
	}
	f.Add(int8(Snappy), compressXerial(nil, []byte("xerial xerial")))
	f.Fuzz(func(t *testing.T, c int8, src []byte) {
		codec := Codec(c & 7)
		const limit = 1 << 16
		out, err := Decompress(codec, nil, src, limit)
		if err != nil {
			if codec <= Zstd && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("%s: error %v wraps neither ErrCorrupt nor ErrTooLarge", codec, err)
			}
			return
		}
		if len(out) > limit {
			t.Fatalf("%s: %d bytes out, limit %d", codec, len(out), limit)
		}
		z, err := Compress(codec, FormatOf(codec, src), nil, out)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decompress(codec, nil, z, limit)
		if err != nil || !bytes.Equal(back, out) {
			t.Fatalf("%s: recompressed output does not decode back: %v", codec, err)
		}
	})
}

// TestLevels: a higher level makes compressible text smaller with gzip, lz4 and
// zstd (Kafka's bounds: the lowest against the highest level), every level
// decompresses to the input, and the defaults are Kafka's.
func TestLevels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	words := []string{"offset", "partition", "broker", "leader", "replica", "segment", "compaction", "consumer",
		"producer", "record", "batch", "topic", "group", "commit", "fetch", "epoch", "sequence", "cleaner"}
	var text []byte
	for len(text) < 256<<10 {
		text = fmt.Appendf(text, "%s %d ", words[rng.IntN(len(words))], rng.IntN(1000))
	}
	for _, tc := range []struct {
		c          Codec
		low, high  int
		defaultLvl int
	}{{Gzip, 1, 9, -1}, {LZ4, 1, 17, 9}, {Zstd, -5, 22, 3}} {
		if d := DefaultLevel(tc.c); d != tc.defaultLvl {
			t.Errorf("%v: default level %d, want %d", tc.c, d, tc.defaultLvl)
		}
		size := map[int]int{}
		for _, level := range []int{tc.low, tc.defaultLvl, tc.high} {
			out, err := CompressLevel(tc.c, Plain, level, []byte("x"), text)
			if err != nil {
				t.Fatalf("%v level %d: %v", tc.c, level, err)
			}
			back, err := Decompress(tc.c, nil, out[1:], len(text))
			if err != nil || !bytes.Equal(back, text) || out[0] != 'x' {
				t.Fatalf("%v level %d: round trip: %v", tc.c, level, err)
			}
			size[level] = len(out)
		}
		if size[tc.high] >= size[tc.low] {
			t.Errorf("%v: level %d gave %d bytes, level %d %d", tc.c, tc.high, size[tc.high], tc.low, size[tc.low])
		}
		t.Logf("%v: %d bytes at level %d, %d at %d (default), %d at %d", tc.c, size[tc.low], tc.low, size[tc.defaultLvl], tc.defaultLvl, size[tc.high], tc.high)
	}
}
