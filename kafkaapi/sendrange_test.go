package kafkaapi

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"

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
	path := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	disk, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer disk.Close()
	for _, tc := range []struct {
		name     string
		file     io.ReaderAt
		sendfile bool
	}{
		{"in-memory", vfs.NewMemFile(bytes.Clone(data)), false},
		{"on disk", disk, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
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
