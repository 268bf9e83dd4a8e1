package bench

// The bare receivers of the baseline: the least a broker's produce path can cost,
// a TCP stream read into a file and nothing else (no parsing, no CRC, no index),
// with read and write through a 1 MiB buffer, and with splice(2) where the
// platform has it. What they cost is the CPU of the receiving thread per GB,
// beside the broker's own CPU per GB in a produce run.

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"time"
)

// receiverRun is one bare receiver's measurement.
type receiverRun struct {
	d   time.Duration // from the first byte sent to the last written
	cpu time.Duration // of the receiving thread
}

// bareReceive sends n bytes of buf over a loopback TCP stream to a goroutine that
// writes them into a new file in dir with recv, and returns how long it took and
// the CPU the receiving goroutine's thread used. The file is removed afterwards.
func bareReceive(dir string, buf []byte, n int64, recv func(net.Conn, *os.File) (int64, error)) (receiverRun, error) {
	f, err := os.CreateTemp(dir, ".skiff-bench-recv-*.tmp")
	if err != nil {
		return receiverRun{}, fmt.Errorf("create receiver file: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	var cpu time.Duration
	d, err := loopbackTo(func(c net.Conn) error { return writeStream(c, buf, n) }, func(c net.Conn) (m int64, err error) {
		cpu, err = onThread(func() error {
			m, err = recv(c, f)
			return err
		})
		if err == nil && m != n {
			err = fmt.Errorf("received %d of %d bytes", m, n)
		}
		return m, err
	})
	if err != nil {
		return receiverRun{}, err
	}
	return receiverRun{d: d, cpu: cpu}, nil
}

// onThread runs fn locked to its OS thread and returns the CPU time that thread
// used meanwhile: the cost of fn's own system calls and copies, without the rest
// of the process (the other end of a loopback stream, the garbage collector).
func onThread(fn func() error) (time.Duration, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := threadCPU()
	err := fn()
	return threadCPU() - t0, err
}

// readWriteReceive copies c into f with read and write through a 1 MiB buffer.
func readWriteReceive(c net.Conn, f *os.File) (int64, error) {
	return io.CopyBuffer(writerOnly{f}, readerOnly{c}, make([]byte, BaselineChunk))
}

// bareReceiver is one way to receive a stream into a file.
type bareReceiver struct {
	name, desc string
	recv       func(net.Conn, *os.File) (int64, error)
}

// bareReceivers are the bare receivers this platform has.
func bareReceivers() []bareReceiver {
	rs := []bareReceiver{{"bare_receiver_read_write", "bare receiver: TCP stream into a file, read+write", readWriteReceive}}
	if spliceReceive != nil {
		rs = append(rs, bareReceiver{"bare_receiver_splice", "bare receiver: TCP stream into a file, splice", spliceReceive})
	}
	return rs
}
