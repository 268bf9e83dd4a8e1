//go:build !linux

package bench

import (
	"errors"
	"io"
	"net"
	"os"
	"time"
)

// sendFileTo sends the first n bytes of f to c; the runtime uses sendfile where
// the platform has it.
func sendFileTo(c net.Conn, f *os.File, n int64) error { return sendFileRange(c, f, 0, n) }

// sendFileRange sends the n bytes of f from offset off to c.
func sendFileRange(c net.Conn, f *os.File, off, n int64) error {
	m, err := io.Copy(c, io.NewSectionReader(f, off, n))
	if err == nil && m != n {
		err = io.ErrUnexpectedEOF
	}
	return err
}

func fdatasync(f *os.File) error { return f.Sync() }

// cpuTime is not measured here: 0.
func cpuTime() time.Duration { return 0 }

// threadCPU is not measured here: 0.
func threadCPU() time.Duration { return 0 }

// processCPU is not measured here.
func processCPU(pid int) (time.Duration, error) {
	return 0, errors.New("the CPU time of another process is read on Linux only")
}

// syncFilesystems is Linux's sync(2) there; elsewhere nothing.
func syncFilesystems() {}

// machineCPU is not measured here: zeros.
func machineCPU() machineTimes { return machineTimes{} }
