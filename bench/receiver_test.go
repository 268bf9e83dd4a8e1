package bench

import (
	"bytes"
	"net"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestBareReceivers: each bare receiver writes exactly the stream it was sent
// into its file, and its thread's CPU is measured.
func TestBareReceivers(t *testing.T) {
	n := int64(3*BaselineChunk + 12345) // not a whole number of chunks
	buf := make([]byte, BaselineChunk)
	for i := range buf {
		buf[i] = byte(i * 31 / 7)
	}
	want := bytes.Repeat(buf, 4)[:n]
	rs := bareReceivers()
	if len(rs) == 0 || rs[0].name != "bare_receiver_read_write" {
		t.Fatalf("receivers %+v", rs)
	}
	for _, r := range rs {
		dir := t.TempDir()
		f, err := os.CreateTemp(dir, "recv")
		if err != nil {
			t.Fatal(err)
		}
		var got int64
		if _, err := loopbackTo(func(c net.Conn) error { return writeStream(c, buf, n) }, func(c net.Conn) (int64, error) {
			got, err = r.recv(c, f)
			return got, err
		}); err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		f.Close()
		data, err := os.ReadFile(f.Name())
		if err != nil || got != n || !bytes.Equal(data, want) {
			t.Errorf("%s: received %d of %d bytes, file of %d, equal %v (%v)", r.name, got, n, len(data), bytes.Equal(data, want), err)
		}

		run, err := bareReceive(dir, buf, n, r.recv)
		if err != nil || run.d <= 0 || (threadCPU() > 0 && run.cpu <= 0) {
			t.Errorf("%s: %+v %v", r.name, run, err)
		}
		if left, _ := os.ReadDir(dir); len(left) != 1 {
			t.Errorf("%s: left %v", r.name, left)
		}
	}
}

// TestProcessCPU: the CPU of a process read from /proc (the null server's, as
// the brokers' stand-in) agrees with this process's own count.
func TestProcessCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	before, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for start := cpuTime(); cpuTime()-start < 100*time.Millisecond; {
		// burn CPU until this process has used 100 ms of it
	}
	after, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := after - before; d < 70*time.Millisecond || after > cpuTime()+20*time.Millisecond {
		t.Errorf("/proc says %v used over 100 ms of spinning (now %v, getrusage %v)", d, after, cpuTime())
	}
	if _, err := processCPU(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
}
