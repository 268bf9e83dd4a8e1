package kafkaapi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// sendFile sends n bytes of f starting at off to nc with sendfile(2), leaving f's own
// offset alone so concurrent readers of the same segment do not interfere. It reports
// ok=false, having sent nothing, when either side has no file descriptor (f is then
// not a syscall.Conn: a segment on an in-memory filesystem); the caller then copies.
func sendFile(nc net.Conn, f io.ReaderAt, off, n int64) (sent int64, ok bool, err error) {
	sc, isSC := nc.(syscall.Conn)
	fc, isFC := f.(syscall.Conn)
	if !isSC || !isFC {
		return 0, false, nil
	}
	dst, err := sc.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	src, err := fc.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	var opErr error
	ctlErr := src.Control(func(infd uintptr) {
		werr := dst.Write(func(outfd uintptr) bool {
			for sent < n {
				chunk := min(n-sent, 1<<30)
				w, e := unix.Sendfile(int(outfd), int(infd), &off, int(chunk))
				if w > 0 {
					sent += int64(w)
				}
				switch {
				case e == unix.EAGAIN:
					return false // wait until the socket is writable
				case e == unix.EINTR:
					continue
				case e != nil:
					opErr = e
					return true
				case w == 0:
					opErr = io.ErrUnexpectedEOF // the file is shorter than the range
					return true
				}
			}
			return true
		})
		if opErr == nil {
			opErr = werr
		}
	})
	if ctlErr != nil && opErr == nil {
		opErr = ctlErr
	}
	if opErr != nil {
		if errors.Is(opErr, unix.EINVAL) && sent == 0 {
			return 0, false, nil // not a sendfile-capable pair: copy instead
		}
		return sent, true, fmt.Errorf("sendfile: %w", opErr)
	}
	return sent, true, nil
}
