package kafkaapi

// Benchmarks of the hot paths inside the Kafka front end: writing a Fetch response
// (header bytes and file ranges, with sendfile or by copying) to a loopback TCP
// connection, and decoding Produce and Fetch requests as conn.handle does. Each
// prints its baseline of the same run: a plain socket write of the same bytes, a
// plain copy of the request bytes.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batchtest"
	"skiff/logstore"
)

// loopbackPair returns both ends of a loopback TCP connection and a channel that
// delivers the number of bytes the reading end received once the writing end is
// closed. The reader reads with a 1 MiB buffer, as a consumer's socket would be
// drained, so that it is not the bottleneck.
func loopbackPair(b *testing.B) (w net.Conn, received <-chan int64) {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	got := make(chan int64, 1)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	r, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		defer r.Close()
		buf := make([]byte, 1<<20)
		var n int64
		for {
			m, err := r.Read(buf)
			n += int64(m)
			if err != nil {
				got <- n
				return
			}
		}
	}()
	w, ok := <-accepted
	if !ok {
		b.Fatal("accept failed")
	}
	return w, got
}

// finish closes w and checks that the reader got want bytes.
func finish(b *testing.B, w net.Conn, received <-chan int64, want int64) {
	b.Helper()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	select {
	case n := <-received:
		if n != want {
			b.Fatalf("reader got %d bytes, want %d", n, want)
		}
	case <-time.After(time.Minute):
		b.Fatal("reader did not finish")
	}
}

// connOnly hides the connection's file descriptor, so that sendRange copies.
type connOnly struct{ net.Conn }

// BenchmarkFetchWrite writes one Fetch response frame per iteration: about 100
// header bytes around each file range, ranges of a segment file in the page cache.
// sendfile is the product's path; copy is the fallback (pread+write through a
// 256 KiB buffer); tcp-write writes the same number of bytes from memory, the
// loopback ceiling of the same run.
func BenchmarkFetchWrite(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "00000000000000000000.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	seg := make([]byte, 6<<20)
	for i := range seg {
		seg[i] = byte('a' + (i*7+i/13)%26)
	}
	if _, err := f.Write(seg); err != nil {
		b.Fatal(err)
	}
	m := NewMetrics(nil)
	for _, shape := range []struct {
		name          string
		ranges, bytes int64
	}{{"1x16KiB", 1, 16 << 10}, {"1x1MiB", 1, 1 << 20}, {"6x1MiB", 6, 1 << 20}} {
		rs := make([]logstore.Range, shape.ranges)
		for i := range rs {
			rs[i] = logstore.Range{File: f, Pos: int64(i) * shape.bytes, Len: shape.bytes}
		}
		build := func(fw *FrameWriter) {
			fw.Reset()
			fw.Int32(7) // correlation id
			fw.Int32(0) // throttle
			for i := range rs {
				fw.Str("bench-topic")
				fw.Int32(int32(i))
				fw.Int16(0)
				fw.Int64(1 << 20)
				fw.Int64(1 << 20)
				fw.Int32(-1)
				fw.Int32(int32(rs[i].Len))
				fw.Ranges(rs[i : i+1])
			}
		}
		var probe FrameWriter
		build(&probe)
		frame := int64(len(probe.buf)) + probe.size // header bytes + ranges
		for _, mode := range []string{"sendfile", "copy", "tcp-write"} {
			b.Run(shape.name+"/"+mode, func(b *testing.B) {
				w, received := loopbackPair(b)
				var nc net.Conn = w
				if mode == "copy" {
					nc = connOnly{w}
				}
				mem := make([]byte, frame)
				var fw FrameWriter
				b.SetBytes(frame)
				b.ReportAllocs()
				n := int64(0)
				for b.Loop() {
					if mode == "tcp-write" {
						if _, err := nc.Write(mem); err != nil {
							b.Fatal(err)
						}
					} else {
						build(&fw)
						if err := fw.Send(nc, m, time.Minute); err != nil {
							b.Fatal(err)
						}
					}
					n++
				}
				b.StopTimer()
				finish(b, w, received, n*frame)
			})
		}
	}
}

// encodeRequest frames req as a client sends it, without the 4-byte size.
func encodeRequest(req kmsg.Request, version int16) []byte {
	req.SetVersion(version)
	h := []byte{0, 0, 0, 0, 0, 0, 0, 7, 0, 9}
	h[0], h[1] = byte(req.Key()>>8), byte(req.Key())
	h[2], h[3] = byte(version>>8), byte(version)
	h = append(h, "skiff-cli"...)
	if req.IsFlexible() {
		h = append(h, 0) // header tagged fields
	}
	return req.AppendTo(h)
}

// decodeRequest is what conn.handle does with a frame before dispatching it
// (decodeFrame: header, Produce's shape walk, kmsg).
func decodeRequest(frame []byte) (kmsg.Request, error) {
	d, err := decodeFrame(frame, 0)
	if err == nil && d.req == nil {
		return nil, fmt.Errorf("key %d v%d not served", d.hdr.Key, d.hdr.Version)
	}
	return d.req, err
}

// BenchmarkDecodeRequest decodes Produce and Fetch requests of the shapes franz-go
// sends (its highest versions served here), from a frame already read into
// memory; frame-copy is the cost of copying the same bytes once, for scale.
func BenchmarkDecodeRequest(b *testing.B) {
	value := make([]byte, 1000)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	batchOf := func(bytes int) []byte {
		vals := make([][]byte, max(bytes/1024, 1))
		for i := range vals {
			vals[i] = value
		}
		return batchtest.Build(batchtest.Producer{ID: 1, Epoch: 0, Sequence: 0}, 1_700_000_000_000, vals...)
	}
	produce := func(parts, batchBytes int) kmsg.Request {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 30000
		t := kmsg.NewProduceRequestTopic()
		t.Topic = "bench-topic"
		for p := range parts {
			pr := kmsg.NewProduceRequestTopicPartition()
			pr.Partition, pr.Records = int32(p), batchOf(batchBytes)
			t.Partitions = append(t.Partitions, pr)
		}
		req.Topics = append(req.Topics, t)
		return req
	}
	fetch := func(parts int) kmsg.Request {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 5000, 1, 50<<20
		req.SessionEpoch = -1
		t := kmsg.NewFetchRequestTopic()
		t.Topic = "bench-topic"
		for p := range parts {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = int32(p), 123456, 1<<20, 0
			t.Partitions = append(t.Partitions, fp)
		}
		req.Topics = append(req.Topics, t)
		return req
	}
	for _, tc := range []struct {
		name    string
		req     kmsg.Request
		version int16
	}{
		{"produce-v7/1x16KiB", produce(1, 16<<10), 7},
		{"produce-v7/6x16KiB", produce(6, 16<<10), 7},
		{"produce-v7/6x1MiB", produce(6, 1<<20), 7},
		{"produce-v11/1x16KiB", produce(1, 16<<10), 11},
		{"produce-v11/6x16KiB", produce(6, 16<<10), 11},
		{"produce-v11/6x1MiB", produce(6, 1<<20), 11},
		{"fetch-v11/1partition", fetch(1), 11},
		{"fetch-v11/6partitions", fetch(6), 11},
		{"fetch-v11/100partitions", fetch(100), 11},
	} {
		frame := encodeRequest(tc.req, tc.version)
		if _, err := decodeRequest(frame); err != nil {
			b.Fatalf("%s: %v", tc.name, err)
		}
		b.Run(tc.name+"/decode", func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeRequest(frame); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/frame-copy", func(b *testing.B) {
			dst := make([]byte, len(frame))
			b.SetBytes(int64(len(frame)))
			for b.Loop() {
				if copy(dst, frame) != len(frame) {
					b.Fatal(errors.New("short copy"))
				}
			}
		})
	}
}

var _ io.Writer = connOnly{}
