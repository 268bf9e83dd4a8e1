package kafkaapi

// Buffered reads of a plaintext connection. Reading a frame's size and key and
// then its body took two read calls per request, and a third that found the
// socket empty; at 20 MB/s with linger 0 and RF 3 (docs/performance.md) a node
// reads about 3,000 small requests a second. A plaintext connection instead
// reads into a pooled buffer of readBufSize and takes frames from it: a small
// request, or several pipelined ones, in one call. The buffer is taken when
// the socket has bytes and given back once its bytes are consumed, so an idle
// connection waiting for its next request holds none (it waits through the
// socket's RawConn, which calls back once the socket is readable). TLS
// connections read through crypto/tls, which buffers its records itself.

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// readBufSize is the most a plaintext connection reads ahead of the frame in
// hand; larger frames are read into their own buffer directly.
const readBufSize = 16 << 10

var readBufs = sync.Pool{New: func() any { b := make([]byte, readBufSize); return &b }}

// connReader is a connection's read-ahead. Only the connection's loop uses it.
type connReader struct {
	rc       syscall.RawConn // the plaintext socket (nil: read the connection itself)
	buf      *[]byte         // from readBufs while it holds unread bytes; nil otherwise
	off, end int             // the unread bytes: (*buf)[off:end]
}

// initReader sets up buffered reads for a plaintext TCP connection.
func (c *conn) initReader() {
	if c.listener.Protocol.TLS() {
		return
	}
	if sc, ok := c.nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.rd.rc = rc
		}
	}
}

// buffered is how many bytes were read past the frames taken so far.
func (r *connReader) buffered() int { return r.end - r.off }

// take copies buffered bytes into p and returns how many; the buffer goes back
// to the pool once it is empty.
func (r *connReader) take(p []byte) int {
	if r.buf == nil {
		return 0
	}
	n := copy(p, (*r.buf)[r.off:r.end])
	r.off += n
	if r.off == r.end {
		r.release()
	}
	return n
}

func (r *connReader) release() {
	if r.buf != nil {
		readBufs.Put(r.buf)
		r.buf, r.off, r.end = nil, 0, 0
	}
}

// fill reads what the socket has, up to readBufSize, into an empty buffer,
// waiting (within the read deadline) until it has something. The buffer is
// taken only once the socket is readable.
func (r *connReader) fill() error {
	var n int
	var serr error
	err := r.rc.Read(func(fd uintptr) bool {
		if r.buf == nil {
			r.buf = readBufs.Get().(*[]byte)
		}
		for {
			n, serr = syscall.Read(int(fd), *r.buf)
			if serr != syscall.EINTR {
				break
			}
		}
		if serr == syscall.EAGAIN {
			r.release() // wait for the socket without holding memory
			return false
		}
		return true
	})
	if err == nil && serr != nil {
		err = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", serr)}
	}
	if err == nil && n <= 0 {
		err = io.EOF
	}
	if err != nil {
		r.release()
		return err
	}
	r.off, r.end = 0, n
	return nil
}

// readSome reads at least one byte into p: buffered bytes if there are any,
// otherwise one read from the socket within now+d. It reports errRefused when
// the connection is stopping.
func (c *conn) readSome(p []byte, d time.Duration) (int, error) {
	if n := c.rd.take(p); n > 0 {
		return n, nil
	}
	if !c.armRead(d) {
		return 0, errRefused
	}
	if c.rd.rc == nil {
		return c.nc.Read(p)
	}
	if err := c.rd.fill(); err != nil {
		return 0, err
	}
	return c.rd.take(p), nil
}

// readFull fills p with buffered bytes and then from the socket, arming the
// read deadline at now+d before the first read from the socket. Like
// io.ReadFull, it reports io.ErrUnexpectedEOF for an end of stream after part
// of p, and errRefused when the connection is stopping.
func (c *conn) readFull(p []byte, d time.Duration) error {
	got := c.rd.take(p)
	if got == len(p) {
		return nil
	}
	if !c.armRead(d) {
		return errRefused
	}
	if c.rd.rc == nil || len(p)-got >= readBufSize {
		n, err := io.ReadFull(c.nc, p[got:])
		if errors.Is(err, io.EOF) && got+n > 0 {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	for got < len(p) {
		if err := c.rd.fill(); err != nil {
			if errors.Is(err, io.EOF) && got > 0 {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		got += c.rd.take(p[got:])
	}
	return nil
}
