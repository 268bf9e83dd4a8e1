// Package compress decompresses and compresses the records of Kafka record
// batches with the codecs a batch's attributes name: gzip, snappy, lz4 and zstd.
// The broker needs them only where it reads records that producers compressed:
// the log cleaner (to read keys and rewrite batches with their own codec) and
// the produce path of compacted topics (every record needs a key).
//
// Formats, as Kafka clients write them:
//   - gzip: one gzip stream (RFC 1952), possibly of several members;
//   - snappy: either one raw snappy block (librdkafka, franz-go) or the xerial
//     framing of Java clients: a 16-byte header (magic 0x82 "SNAPPY" 0x00,
//     version, compatible version) then blocks of a 4-byte big-endian length and
//     a raw snappy block; both are read, and Compress writes the framing the
//     input had (Format);
//   - lz4: the LZ4 frame format (magic 0x184D2204);
//   - zstd: one or more zstd frames.
//
// Decompression is bounded: a batch that would decompress to more than the
// caller's limit is refused (ErrTooLarge), so a small hostile batch cannot take
// the broker's memory.
package compress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is a batch's compression: the value of attribute bits 0-2. The values
// are Kafka's and must not change.
type Codec int8

// Kafka's codecs.
const (
	None   Codec = 0
	Gzip   Codec = 1
	Snappy Codec = 2
	LZ4    Codec = 3
	Zstd   Codec = 4
)

func (c Codec) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// Format is how the compressed bytes were framed, where a codec has more than
// one framing (snappy); Compress writes the same one.
type Format int8

// Formats.
const (
	Plain  Format = iota // the codec's one format; for snappy a raw block
	Xerial               // snappy in the xerial framing of Java clients
)

// Errors of Decompress.
var (
	ErrCodec    = errors.New("compress: unknown compression codec")
	ErrTooLarge = errors.New("compress: decompressed records exceed the limit")
	ErrCorrupt  = errors.New("compress: corrupt compressed records")
)

// xerialHeader starts xerial-framed snappy: magic, then version 1 and
// compatible version 1 (int32 big endian each). Must not change.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}

// xerialMagic is the part of the header that identifies the framing.
var xerialMagic = xerialHeader[:8]

// xerialBlock is the uncompressed size of one xerial block written by Compress
// (the Java client's default).
const xerialBlock = 32 << 10

// FormatOf reports the framing of compressed records src of codec c.
func FormatOf(c Codec, src []byte) Format {
	if c == Snappy && bytes.HasPrefix(src, xerialMagic) {
		return Xerial
	}
	return Plain
}

// Decompress appends to dst the records src decompressed with codec c and
// returns the result. More than limit bytes of output is ErrTooLarge; input
// that does not decode is an error wrapping ErrCorrupt.
func Decompress(c Codec, dst, src []byte, limit int) ([]byte, error) {
	var out []byte
	var err error
	switch c {
	case None:
		if len(src) > limit {
			return dst, ErrTooLarge
		}
		return append(dst, src...), nil
	case Gzip:
		out, err = decompressGzip(dst, src, limit)
	case Snappy:
		if FormatOf(c, src) == Xerial {
			out, err = decompressXerial(dst, src, limit)
		} else {
			out, err = decompressSnappyBlock(dst, src, limit)
		}
	case LZ4:
		out, err = decompressLZ4(dst, src, limit)
	case Zstd:
		out, err = decompressZstd(dst, src, limit)
	default:
		return dst, fmt.Errorf("%w %d", ErrCodec, c)
	}
	if err != nil && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrCorrupt) {
		err = fmt.Errorf("%w: %s: %v", ErrCorrupt, c, err)
	}
	return out, err
}

// readBounded appends to dst what r reads, refusing more than limit bytes.
func readBounded(dst []byte, r io.Reader, limit int) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	n, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return dst, err
	}
	if n > int64(limit) {
		return dst, ErrTooLarge
	}
	return buf.Bytes(), nil
}

var gzipReaders sync.Pool // of *gzip.Reader

func decompressGzip(dst, src []byte, limit int) ([]byte, error) {
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(bytes.NewReader(src))
	} else {
		err = zr.Reset(bytes.NewReader(src))
	}
	if err != nil {
		return dst, err
	}
	defer gzipReaders.Put(zr)
	return readBounded(dst, zr, limit)
}

func decompressSnappyBlock(dst, src []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return dst, err
	}
	if n > limit {
		return dst, ErrTooLarge
	}
	out := growTo(dst, n)
	if _, err := snappy.Decode(out[len(dst):], src); err != nil {
		return dst, err
	}
	return out, nil
}

// decompressXerial reads the xerial framing: the header, then blocks of a
// 4-byte big-endian length and a raw snappy block.
func decompressXerial(dst, src []byte, limit int) ([]byte, error) {
	if len(src) < len(xerialHeader) {
		return dst, fmt.Errorf("%w: snappy: xerial header of %d bytes", ErrCorrupt, len(src))
	}
	rest := src[len(xerialHeader):]
	out, total := dst, 0
	for len(rest) > 0 {
		if len(rest) < 4 {
			return dst, fmt.Errorf("%w: snappy: xerial block length cut off", ErrCorrupt)
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return dst, fmt.Errorf("%w: snappy: xerial block of %d bytes, %d left", ErrCorrupt, n, len(rest))
		}
		block := rest[:n]
		rest = rest[n:]
		m, err := snappy.DecodedLen(block)
		if err != nil {
			return dst, err
		}
		if total += m; total > limit {
			return dst, ErrTooLarge
		}
		start := len(out)
		out = growTo(out, m)
		if _, err := snappy.Decode(out[start:], block); err != nil {
			return dst, err
		}
	}
	return out, nil
}

var lz4Readers = sync.Pool{New: func() any { return lz4.NewReader(nil) }}

func decompressLZ4(dst, src []byte, limit int) ([]byte, error) {
	zr := lz4Readers.Get().(*lz4.Reader)
	defer lz4Readers.Put(zr)
	zr.Reset(bytes.NewReader(src))
	return readBounded(dst, zr, limit)
}

// zstdDecoders holds one decoder per bound (in practice one): DecodeAll
// refuses to produce more than the decoder's maximum, so a frame that does not
// state its size is stopped there too. The bound is at least zstdMinBound,
// since it also bounds the frame's window, which a compressor may choose larger
// than a small batch needs. Decoders are safe for concurrent use.
var zstdDecoders sync.Map // bound -> *zstd.Decoder

const zstdMinBound = 64 << 20

func decompressZstd(dst, src []byte, limit int) ([]byte, error) {
	var h zstd.Header
	if err := h.Decode(src); err == nil && h.HasFCS && h.FrameContentSize > uint64(limit) {
		return dst, ErrTooLarge
	}
	bound := max(limit, zstdMinBound)
	d, ok := zstdDecoders.Load(bound)
	if !ok {
		nd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(uint64(bound)))
		if err != nil {
			return dst, err
		}
		if d, ok = zstdDecoders.LoadOrStore(bound, nd); ok {
			nd.Close()
		}
	}
	base := len(dst)
	out, err := d.(*zstd.Decoder).DecodeAll(src, dst)
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || err == nil && len(out)-base > limit {
		return dst, ErrTooLarge
	}
	if err != nil {
		return dst, err
	}
	return out, nil
}

// growTo returns b extended by n bytes (their contents unspecified).
func growTo(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b[:len(b)+n]
	}
	nb := make([]byte, len(b)+n, 2*len(b)+n)
	copy(nb, b)
	return nb
}

// Compress appends src compressed with codec c (in format f where c has more
// than one) to dst and returns the result.
func Compress(c Codec, f Format, dst, src []byte) ([]byte, error) {
	switch c {
	case None:
		return append(dst, src...), nil
	case Gzip:
		return compressStream(&gzipWriters, dst, src)
	case Snappy:
		if f == Xerial {
			return compressXerial(dst, src), nil
		}
		start := len(dst)
		out := growTo(dst, s2.MaxEncodedLen(len(src)))
		return out[:start+len(s2.EncodeSnappy(out[start:], src))], nil
	case LZ4:
		return compressStream(&lz4Writers, dst, src)
	case Zstd:
		return zstdEncoder().EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("%w %d", ErrCodec, c)
}

var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// Kafka's defaults of compression.gzip.level, compression.lz4.level and
// compression.zstd.level (KIP-390), the levels at which the broker compresses
// under compression.type.
const (
	DefaultGzipLevel = -1 // the codec's default: 6, as Java's Deflater
	DefaultLZ4Level  = 9
	DefaultZstdLevel = 3
)

// DefaultLevel is Kafka's default level of codec c (0 for those without levels).
func DefaultLevel(c Codec) int {
	switch c {
	case Gzip:
		return DefaultGzipLevel
	case LZ4:
		return DefaultLZ4Level
	case Zstd:
		return DefaultZstdLevel
	}
	return 0
}

// CompressLevel is Compress at level, in Kafka's terms (KIP-390): gzip 1 to 9,
// or -1 for its default; lz4 1 (its fast compressor) to 17 (high compression;
// 9 and above compress alike here); zstd -131072 to 22 (in four steps here:
// below 3, 3 to 5, 6 to 9, 10 and above). Snappy and None have no levels.
func CompressLevel(c Codec, f Format, level int, dst, src []byte) ([]byte, error) {
	switch c {
	case Gzip, LZ4:
		return compressStream(leveledPool(c, level), dst, src)
	case Zstd:
		return zstdEncoderAt(zstd.EncoderLevelFromZstd(level)).EncodeAll(src, dst), nil
	}
	return Compress(c, f, dst, src)
}

// leveledPools holds a pool of writers per codec (gzip, lz4) and level.
var leveledPools sync.Map // leveled -> *sync.Pool

type leveled struct {
	c     Codec
	level int
}

func leveledPool(c Codec, level int) *sync.Pool {
	if c == Gzip && (level < 1 || level > 9) {
		level = 6 // Kafka's -1 is Java's Deflater default
	}
	if c == LZ4 {
		level = min(max(level, 1), 9) // pierrec/lz4 stops at 9
	}
	if p, ok := leveledPools.Load(leveled{c, level}); ok {
		return p.(*sync.Pool)
	}
	p := &sync.Pool{New: func() any {
		if c == Gzip {
			w, err := gzip.NewWriterLevel(nil, level)
			if err != nil {
				panic(err) // only for invalid levels
			}
			return w
		}
		lv := lz4.Fast // Kafka's level 1: the fast compressor
		if level > 1 {
			lv = lz4.Level1 << (level - 1)
		}
		w := lz4.NewWriter(nil)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.CompressionLevelOption(lv)); err != nil {
			panic(err) // only for invalid options
		}
		return w
	}}
	p2, _ := leveledPools.LoadOrStore(leveled{c, level}, p)
	return p2.(*sync.Pool)
}

// streamWriter is a pooled compressing writer (gzip, lz4).
type streamWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// compressStream appends src compressed by a writer from pool to dst.
func compressStream(pool *sync.Pool, dst, src []byte) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	zw := pool.Get().(streamWriter)
	defer pool.Put(zw)
	zw.Reset(buf)
	if _, err := zw.Write(src); err != nil {
		return dst, err
	}
	if err := zw.Close(); err != nil {
		return dst, err
	}
	return buf.Bytes(), nil
}

func compressXerial(dst, src []byte) []byte {
	out := append(dst, xerialHeader...)
	for len(src) > 0 {
		n := min(len(src), xerialBlock)
		lenAt := len(out)
		out = append(out, 0, 0, 0, 0)
		start := len(out)
		out = growTo(out, s2.MaxEncodedLen(n))
		enc := s2.EncodeSnappy(out[start:start], src[:n])
		out = out[:start+len(enc)]
		binary.BigEndian.PutUint32(out[lenAt:], uint32(len(enc)))
		src = src[n:]
	}
	return out
}

var lz4Writers = sync.Pool{New: func() any {
	w := lz4.NewWriter(nil)
	if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
		panic(err) // only for invalid options
	}
	return w
}}

// zstdEncoder encodes whole frames (EncodeAll) at zstd's default level.
func zstdEncoder() *zstd.Encoder { return zstdEncoderAt(zstd.SpeedDefault) }

// zstdEncoders are the encoders of zstdEncoderAt, made once for each level.
var zstdEncoders [zstd.SpeedBestCompression + 1]struct {
	once sync.Once
	e    *zstd.Encoder
}

// zstdEncoderAt returns an encoder of whole frames (EncodeAll) at level, safe
// for concurrent use; the window matches what Kafka clients use, so that any
// consumer can decode it.
func zstdEncoderAt(level zstd.EncoderLevel) *zstd.Encoder {
	z := &zstdEncoders[level]
	z.once.Do(func() {
		e, err := zstd.NewWriter(nil, zstd.WithWindowSize(64<<10), zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true),
			zstd.WithEncoderLevel(level))
		if err != nil {
			panic(err) // only for invalid options
		}
		z.e = e
	})
	return z.e
}
