package bench

// The bare replication of the baseline: the least RF 3 on one machine can cost,
// and its ratio to the bare receiver. A leader receives the TCP stream into its
// file (read+write through a 1 MiB buffer, as bare_receiver_read_write), and after
// each write sends the file's new bytes with sendfile(2) to two followers over
// loopback, as a broker answers follower fetches; each follower reads them into a
// file of its own through a 1 MiB buffer. No parsing, no CRC, no index, no
// requests: every byte is received three times, written three times and sent
// twice, and that is all.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// replicationRun is one bare replication's measurement.
type replicationRun struct {
	d         time.Duration    // from the first byte sent to the last written by the last follower
	leader    time.Duration    // CPU of the leader's thread
	followers [2]time.Duration // CPU of each follower's thread
}

// cpu is the three threads' CPU together.
func (r replicationRun) cpu() time.Duration { return r.leader + r.followers[0] + r.followers[1] }

// bareReplicate sends n bytes of buf over a loopback TCP stream to a leader that
// writes them into a new file in dir and sends each write's bytes from that file
// with sendfile to two followers, each writing them into a file of its own in dir
// with read+write. It returns how long it took and the CPU of the leader's and the
// followers' threads. The files are removed afterwards; after returns, when not
// nil, is called with the three files before that (tests check their contents).
func bareReplicate(dir string, buf []byte, n int64, after func(leader *os.File, followers [2]*os.File)) (replicationRun, error) {
	var files [3]*os.File
	for i := range files {
		f, err := os.CreateTemp(dir, ".skiff-bench-repl-*.tmp")
		if err != nil {
			return replicationRun{}, fmt.Errorf("create replication file: %w", err)
		}
		defer os.Remove(f.Name())
		defer f.Close()
		files[i] = f
	}
	var run replicationRun

	// The followers: each accepts one connection from the leader and receives it.
	type followerEnd struct {
		l    net.Listener
		done chan error
	}
	var fs [2]followerEnd
	for i := range fs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return replicationRun{}, err
		}
		defer l.Close()
		fs[i] = followerEnd{l: l, done: make(chan error, 1)}
		go func() {
			fs[i].done <- func() error {
				c, err := l.Accept()
				if err != nil {
					return err
				}
				defer c.Close()
				c.SetReadDeadline(time.Now().Add(baselineTimeout))
				var m int64
				run.followers[i], err = onThread(func() (err error) {
					m, err = readWriteReceive(c, files[1+i])
					return err
				})
				if err == nil && m != n {
					err = fmt.Errorf("follower %d received %d of %d bytes", i+1, m, n)
				}
				return err
			}()
		}()
	}
	var conns [2]net.Conn
	for i := range fs {
		c, err := net.DialTimeout("tcp", fs[i].l.Addr().String(), 10*time.Second)
		if err != nil {
			return replicationRun{}, err
		}
		defer c.Close()
		c.SetWriteDeadline(time.Now().Add(baselineTimeout))
		conns[i] = c
	}

	d, err := loopbackTo(func(c net.Conn) error { return writeStream(c, buf, n) }, func(c net.Conn) (m int64, err error) {
		run.leader, err = onThread(func() error {
			m, err = leaderReceive(c, files[0], buf, conns)
			return err
		})
		// The followers see the end of their streams, and finish.
		for _, fc := range conns {
			err = errors.Join(err, fc.(*net.TCPConn).CloseWrite())
		}
		for i := range fs {
			if ferr := <-fs[i].done; ferr != nil {
				err = errors.Join(err, fmt.Errorf("follower %d: %w", i+1, ferr))
			}
		}
		if err == nil && m != n {
			err = fmt.Errorf("leader received %d of %d bytes", m, n)
		}
		return m, err
	})
	if err != nil {
		return replicationRun{}, err
	}
	run.d = d
	if after != nil {
		after(files[0], [2]*os.File{files[1], files[2]})
	}
	return run, nil
}

// leaderReceive copies c into f with read and write through a buffer of the size
// of buf, and after each write sends the bytes just written from f to every
// follower with sendfile.
func leaderReceive(c net.Conn, f *os.File, buf []byte, followers [2]net.Conn) (int64, error) {
	b := make([]byte, len(buf))
	var total int64
	for {
		m, rerr := c.Read(b)
		if m > 0 {
			if _, err := f.Write(b[:m]); err != nil {
				return total, fmt.Errorf("leader write: %w", err)
			}
			for i, fc := range followers {
				if err := sendFileRange(fc, f, total, int64(m)); err != nil {
					return total, fmt.Errorf("send to follower %d: %w", i+1, err)
				}
			}
			total += int64(m)
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return total, nil
			}
			return total, rerr
		}
	}
}
