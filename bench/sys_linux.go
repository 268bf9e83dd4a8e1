package bench

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sendFileTo sends the first n bytes of f to c with sendfile(2), as the Fetch
// path does (kafkaapi/sendfile_linux.go).
func sendFileTo(c net.Conn, f *os.File, n int64) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return fmt.Errorf("sendfile: %T has no file descriptor", c)
	}
	dst, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	src, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var off, sent int64
	var opErr error
	ctlErr := src.Control(func(infd uintptr) {
		werr := dst.Write(func(outfd uintptr) bool {
			for sent < n {
				w, e := unix.Sendfile(int(outfd), int(infd), &off, int(min(n-sent, 1<<30)))
				if w > 0 {
					sent += int64(w)
				}
				switch {
				case e == unix.EAGAIN:
					return false
				case e == unix.EINTR:
					continue
				case e != nil:
					opErr = e
					return true
				case w == 0:
					opErr = io.ErrUnexpectedEOF
					return true
				}
			}
			return true
		})
		if opErr == nil {
			opErr = werr
		}
	})
	if opErr == nil {
		opErr = ctlErr
	}
	if opErr != nil {
		return fmt.Errorf("sendfile: %w", opErr)
	}
	return nil
}

// fdatasync is what the broker's log uses to sync a segment (logstore/sync_linux.go).
func fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// cpuTime is the CPU time (user and system) this process has used so far.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// syncFilesystems writes back every dirty page of the machine (sync(2)), so that a
// measurement does not pay for the writeback of the one before it.
func syncFilesystems() { unix.Sync() }
