package kafkaapi

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"skiff/logstore"
)

// FrameWriter assembles one response frame made of header bytes and file ranges, and
// writes it with one write per run of bytes and one sendfile per file range, so
// record bytes of a large frame never pass through user space on a plaintext
// connection. A frame of at most smallFrame bytes is read into memory and written
// at once instead. Fetch responses are written with it. Reset starts a frame,
// whose first bytes are the correlation id; Send writes it; Release lets go of its
// buffers.
type FrameWriter struct {
	buf    []byte      // every byte piece, back to back
	pieces []framePart // in frame order
	size   int64       // frame size after the 4-byte length prefix
}

type framePart struct {
	end int // bytes piece: buf[previous end:end]
	rng *logstore.Range
}

// Reset starts a new frame.
func (w *FrameWriter) Reset() {
	w.buf = append(getBuf(responseBufSize)[:0], 0, 0, 0, 0) // frame size, filled in by Send
	w.pieces = w.pieces[:0]
	w.size = 0
}

// Release returns the writer's buffers once the frame is written, so that an idle
// connection holds none.
func (w *FrameWriter) Release() {
	putBuf(w.buf)
	w.buf = nil
	clear(w.pieces) // they point at file ranges released by now
	if cap(w.pieces) > 1024 {
		w.pieces = nil
	}
}

// Int16, Int32, Int64 and Str append Kafka's INT16, INT32, INT64 and STRING.
func (w *FrameWriter) Int16(v int16) { w.buf = binary.BigEndian.AppendUint16(w.buf, uint16(v)) }
func (w *FrameWriter) Int32(v int32) { w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(v)) }
func (w *FrameWriter) Int64(v int64) { w.buf = binary.BigEndian.AppendUint64(w.buf, uint64(v)) }
func (w *FrameWriter) Str(s string) {
	w.Int16(int16(len(s)))
	w.buf = append(w.buf, s...)
}

// Ranges appends file ranges after the bytes written so far.
func (w *FrameWriter) Ranges(rs []logstore.Range) {
	for i := range rs {
		w.pieces = append(w.pieces, framePart{end: len(w.buf)}, framePart{rng: &rs[i]})
		w.size += rs[i].Len
	}
}

// smallFrame: a frame up to this size goes out in one write. Each write to a
// loopback or LAN peer wakes its reader: a follower's fetch answer of a few KiB
// written as header, sendfile, header... woke the follower once per piece, and
// the wakeups, not the copy of a few KiB, were the cost (docs/performance.md,
// Replication).
const smallFrame = 32 << 10

// Send writes the whole frame to nc, within timeout, and counts record bytes in m.
func (w *FrameWriter) Send(nc net.Conn, m *Metrics, timeout time.Duration) error {
	w.pieces = append(w.pieces, framePart{end: len(w.buf)})
	w.size += int64(len(w.buf)) - 4
	binary.BigEndian.PutUint32(w.buf, uint32(w.size))
	nc.SetWriteDeadline(time.Now().Add(timeout))
	if w.size+4 <= smallFrame && len(w.pieces) > 1 {
		return w.sendWhole(nc, m)
	}
	start := 0
	for _, p := range w.pieces {
		if p.rng == nil {
			if p.end > start {
				if _, err := nc.Write(w.buf[start:p.end]); err != nil {
					return fmt.Errorf("write fetch response: %w", err)
				}
			}
			start = p.end
			continue
		}
		if err := sendRange(nc, p.rng, m); err != nil {
			return err
		}
	}
	return nil
}

// sendWhole reads the frame's file ranges into one buffer with its bytes and
// writes it with one write.
func (w *FrameWriter) sendWhole(nc net.Conn, m *Metrics) error {
	out := getBuf(int(w.size) + 4)[:0]
	defer func() { putBuf(out) }()
	start := 0
	var copied int64
	for _, p := range w.pieces {
		if p.rng == nil {
			out = append(out, w.buf[start:p.end]...)
			start = p.end
			continue
		}
		n := len(out)
		out = out[:n+int(p.rng.Len)]
		if got, err := p.rng.File.ReadAt(out[n:], p.rng.Pos); got < int(p.rng.Len) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF // the file is shorter than the range
			}
			return fmt.Errorf("read fetch records: %w", err)
		}
		copied += p.rng.Len
	}
	if _, err := nc.Write(out); err != nil {
		return fmt.Errorf("write fetch response: %w", err)
	}
	m.copiedBytes.Add(float64(copied))
	return nil
}

func sendRange(nc net.Conn, r *logstore.Range, m *Metrics) error {
	sent, ok, err := sendFile(nc, r.File, r.Pos, r.Len)
	if ok {
		m.sendfileBytes.Add(float64(sent))
		return err
	}
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	n, err := io.CopyBuffer(writerOnly{nc}, io.NewSectionReader(r.File, r.Pos, r.Len), *buf)
	m.copiedBytes.Add(float64(n))
	if err == nil && n != r.Len {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return fmt.Errorf("copy fetch records: %w", err)
	}
	return nil
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// writerOnly hides ReadFrom so that io.CopyBuffer uses the buffer (the copy path).
type writerOnly struct{ io.Writer }
