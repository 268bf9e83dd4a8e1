package kafkaapi

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"

	"skiff/logstore"
)

// TestSendRangeCopiesFilesWithoutDescriptor: a Range whose File has no descriptor
// (a segment on an in-memory filesystem, as crash tests use) is copied through the
// buffer, byte for byte; a Range on an OS file (vfs.Default) goes by sendfile.
func TestSendRangeCopiesFilesWithoutDescriptor(t *testing.T) {
	data := make([]byte, 3<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	disk := osFile(t, data)
	for _, tc := range []struct {
		name     string
		file     io.ReaderAt
		sendfile bool
	}{
		{"in-memory", vfs.NewMemFile(bytes.Clone(data)), false},
		{"on disk", disk, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, got := loopbackPeer(t)
			reg := prometheus.NewRegistry()
			m := NewMetrics(reg)
			r := logstore.Range{File: tc.file, Pos: 1000, Len: int64(len(data)) - 2000}
			if err := sendRange(nc, &r, m); err != nil {
				t.Fatal(err)
			}
			nc.Close()
			if b := <-got; !bytes.Equal(b, data[1000:len(data)-1000]) {
				t.Fatalf("received %d bytes that differ from the range's %d", len(b), r.Len)
			}
			copied, sent := counter(t, reg, "skiff_fetch_bytes_copied_total"), counter(t, reg, "skiff_fetch_bytes_sendfile_total")
			if tc.sendfile && (sent != float64(r.Len) || copied != 0) || !tc.sendfile && (copied != float64(r.Len) || sent != 0) {
				t.Fatalf("sendfile bytes %v, copied bytes %v, for a range of %d", sent, copied, r.Len)
			}
		})
	}
}

// osFile returns an OS file (vfs.Default, closed at the test's end) holding data.
func osFile(t *testing.T, data []byte) vfs.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// loopbackPeer returns a connection to a loopback peer that reads until the
// connection closes, and the channel on which the peer then hands over all it read.
func loopbackPeer(t *testing.T) (net.Conn, <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return nc, got
}

// counter returns the value of the counter named name in reg.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestFrameWriterSmallFrameOneWrite: a frame of at most smallFrame bytes reaches
// the peer whole and in order (bytes, range, bytes, range), its record bytes
// counted as copied; a larger one goes by sendfile.
func TestFrameWriterSmallFrameOneWrite(t *testing.T) {
	data := make([]byte, 2*smallFrame)
	for i := range data {
		data[i] = byte(i * 7)
	}
	disk := osFile(t, data)
	for _, tc := range []struct {
		name     string
		rangeLen int64
		sendfile bool
	}{
		{"small", 1000, false},
		{"large", smallFrame, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, got := loopbackPeer(t)
			reg := prometheus.NewRegistry()
			m := NewMetrics(reg)
			var w FrameWriter
			w.Reset()
			w.Int32(7)
			rs := []logstore.Range{{File: disk, Pos: 10, Len: tc.rangeLen}}
			w.Ranges(rs)
			w.Str("mid")
			rs2 := []logstore.Range{{File: disk, Pos: 500, Len: 20}}
			w.Ranges(rs2)
			w.Int16(-1)
			if err := w.Send(nc, m, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			w.Release()
			nc.Close()
			want := binary.BigEndian.AppendUint32(nil, uint32(4+tc.rangeLen+5+20+2))
			want = binary.BigEndian.AppendUint32(want, 7)
			want = append(want, data[10:10+tc.rangeLen]...)
			want = append(want, 0, 3, 'm', 'i', 'd')
			want = append(want, data[500:520]...)
			want = append(want, 0xff, 0xff)
			if b := <-got; !bytes.Equal(b, want) {
				t.Fatalf("received %d bytes that differ from the frame's %d", len(b), len(want))
			}
			records := float64(tc.rangeLen + 20)
			copied, sent := counter(t, reg, "skiff_fetch_bytes_copied_total"), counter(t, reg, "skiff_fetch_bytes_sendfile_total")
			if tc.sendfile && (sent != records || copied != 0) || !tc.sendfile && (copied != records || sent != 0) {
				t.Fatalf("sendfile bytes %v, copied bytes %v, for %v record bytes", sent, copied, records)
			}
		})
	}
}
