package bench

import (
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// spliceReceive moves c into f with splice(2) through a pipe, the bytes never
// crossing into user space: socket to pipe, pipe to file.
var spliceReceive = func(c net.Conn, f *os.File) (int64, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, fmt.Errorf("splice: %T has no file descriptor", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return 0, fmt.Errorf("splice: pipe: %w", err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	pipeSize := BaselineChunk
	if _, err := unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, pipeSize); err != nil {
		pipeSize = 64 << 10 // the default, when the limit (pipe-max-size) refuses more
	}
	sc2, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var total int64
	for {
		var inPipe int
		var opErr error
		eof := false
		rerr := rc.Read(func(fd uintptr) bool {
			for {
				m, e := unix.Splice(int(fd), nil, p[1], nil, pipeSize, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
				switch {
				case e == unix.EINTR:
					continue
				case e == unix.EAGAIN:
					return false // wait until the socket is readable
				case e != nil:
					opErr = e
				case m == 0:
					eof = true
				}
				inPipe = int(m)
				return true
			}
		})
		if err := cmpOr(opErr, rerr); err != nil {
			return total, fmt.Errorf("splice from the socket: %w", err)
		}
		if eof {
			return total, nil
		}
		werr := sc2.Control(func(fd uintptr) {
			for inPipe > 0 && opErr == nil {
				m, e := unix.Splice(p[0], nil, int(fd), nil, inPipe, unix.SPLICE_F_MOVE)
				switch {
				case e == unix.EINTR:
				case e != nil:
					opErr = e
				default:
					inPipe -= int(m)
					total += m
				}
			}
		})
		if err := cmpOr(opErr, werr); err != nil {
			return total, fmt.Errorf("splice into the file: %w", err)
		}
	}
}
