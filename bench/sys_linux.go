package bench

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sendFileTo sends the first n bytes of f to c with sendfile(2), as the Fetch
// path does (kafkaapi/sendfile_linux.go).
func sendFileTo(c net.Conn, f *os.File, n int64) error { return sendFileRange(c, f, 0, n) }

// sendFileRange sends the n bytes of f from offset off to c with sendfile(2).
func sendFileRange(c net.Conn, f *os.File, off, n int64) error {
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
	var sent int64
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

// threadCPU is the CPU time (user and system) the calling thread has used so
// far: meaningful only while the goroutine is locked to it (onThread).
func threadCPU() time.Duration {
	var ts unix.Timespec // the scheduler's own count, finer than getrusage's ticks
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// processCPU is the CPU time (user and system) process pid has used so far,
// from /proc/PID/stat (in clock ticks of 10 ms).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses and may hold spaces.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, b)
	}
	const hz = 100 // USER_HZ
	var ticks int64
	for _, s := range f[11:13] { // utime, stime: fields 14 and 15 of the whole line
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / hz, nil
}

// syncFilesystems writes back every dirty page of the machine (sync(2)), so that a
// measurement does not pay for the writeback of the one before it.
func syncFilesystems() { unix.Sync() }

// machineCPU reads the first line of /proc/stat: the CPU time of the whole
// machine so far, all cores, and how much of it was idle or waiting for I/O.
func machineCPU() (m machineTimes) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return m
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return m
	}
	const hz = 100 // USER_HZ, fixed at 100 on Linux
	// user nice system idle iowait irq softirq steal (guest is already in user)
	for i, s := range f[1:min(len(f), 9)] {
		v, _ := strconv.ParseFloat(s, 64)
		m.total += v / hz
		switch i {
		case 3:
			m.idle += v / hz
		case 4:
			m.iowait += v / hz
		}
	}
	return m
}
