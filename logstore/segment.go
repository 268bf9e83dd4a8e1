package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"

	"skiff/internal/batch"
)

// segmentSuffix ends every segment file name; the rest is the base offset as 20
// decimal digits. Must not change.
const segmentSuffix = ".log"

func segmentName(base int64) string { return fmt.Sprintf("%020d%s", base, segmentSuffix) }

// parseSegmentName returns the base offset encoded in a segment file name.
func parseSegmentName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, segmentSuffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || base < 0 {
		return 0, false
	}
	return base, true
}

// segment is one segment of the log. The mutable fields are written only with
// both Log.appendMu and Log.mu held, so writers may read them under appendMu
// alone and readers under Log.mu (read mode).
type segment struct {
	base int64
	file *segFile

	size    int64 // bytes of whole batches in the file
	next    int64 // offset after the last batch
	maxTs   int64 // largest batch maxTimestamp, -1 when empty
	firstTs int64 // maxTimestamp of the first batch (roll by age); -1 when empty
	closed  bool  // rolled: no more appends
	// unsynced: rolled but not yet fdatasynced (the next Sync or Close does it).
	// Written with Log.appendMu held only.
	unsynced bool
}

// meta is what the index records about s; Closed means rolled and on disk.
func (s *segment) meta() SegmentMeta {
	return SegmentMeta{BaseOffset: s.base, Size: s.size, NextOffset: s.next, MaxTimestamp: s.maxTs, Closed: s.closed && !s.unsynced}
}

func (l *Log) segmentPath(base int64) string { return l.fs.PathJoin(l.dir, segmentName(base)) }

// Header reads start at headerReadMin bytes and double with every refill up to
// headerReadMax: locating one batch costs one small read, and walking many small
// batches (a large Fetch) costs few syscalls. Large batches cost one read each.
const (
	headerReadMin = 4 << 10
	headerReadMax = 64 << 10
)

var headerBufPool = sync.Pool{New: func() any { b := make([]byte, headerReadMax); return &b }}

// headerReader walks batch headers of one segment file without reading record
// bytes it does not need. It never reads at or past limit (the published size).
type headerReader struct {
	f     io.ReaderAt
	path  string
	limit int64
	bufp  *[]byte
	off   int64 // file position of buf[0]
	n     int   // valid bytes in buf
	read  int64 // size of the next read
}

func newHeaderReader(f io.ReaderAt, path string, limit int64) *headerReader {
	return &headerReader{f: f, path: path, limit: limit, bufp: headerBufPool.Get().(*[]byte), read: headerReadMin}
}

func (r *headerReader) release() {
	if r.bufp != nil {
		headerBufPool.Put(r.bufp)
		r.bufp = nil
	}
}

// header returns the header of the batch at pos and checks that the whole batch
// lies below the limit.
func (r *headerReader) header(pos int64) (batch.Header, error) {
	if pos+batch.HeaderSize > r.limit {
		return batch.Header{}, &CorruptionError{File: r.path, Pos: pos, Err: batch.ErrShort}
	}
	buf := *r.bufp
	if pos < r.off || pos+batch.HeaderSize > r.off+int64(r.n) {
		n := r.read
		r.read = min(2*r.read, headerReadMax)
		if rem := r.limit - pos; rem < n {
			n = rem
		}
		got, err := r.f.ReadAt(buf[:n], pos)
		if int64(got) < batch.HeaderSize {
			if err == nil || err == io.EOF {
				err = batch.ErrShort
			}
			return batch.Header{}, &CorruptionError{File: r.path, Pos: pos, Err: err}
		}
		r.off, r.n = pos, got
	}
	h, err := batch.ParseHeader(buf[pos-r.off:])
	if err != nil {
		return h, &CorruptionError{File: r.path, Pos: pos, Err: err}
	}
	if pos+h.Size() > r.limit {
		return h, &CorruptionError{File: r.path, Pos: pos, Err: batch.ErrLength}
	}
	return h, nil
}

// readBatch reads and fully checks (batch.Check) the batch at pos of f, whose
// size is fileSize. buf is reused when large enough. It returns the header, the
// batch bytes and an error describing why the bytes at pos are not a valid batch.
func readBatch(f io.ReaderAt, pos, fileSize int64, buf []byte) (batch.Header, []byte, error) {
	if fileSize-pos < batch.LogOverhead {
		return batch.Header{}, buf, batch.ErrShort
	}
	var lenBuf [batch.LogOverhead]byte
	if _, err := f.ReadAt(lenBuf[:], pos); err != nil {
		return batch.Header{}, buf, err
	}
	n := int64(int32(binary.BigEndian.Uint32(lenBuf[8:]))) + batch.LogOverhead
	if n < batch.HeaderSize {
		return batch.Header{}, buf, fmt.Errorf("%w: batchLength %d", batch.ErrLength, n-batch.LogOverhead)
	}
	if n > fileSize-pos {
		return batch.Header{}, buf, fmt.Errorf("%w: batch of %d bytes, %d left in file", batch.ErrShort, n, fileSize-pos)
	}
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := f.ReadAt(buf, pos); err != nil {
		return batch.Header{}, buf, err
	}
	h, err := batch.Check(buf)
	return h, buf, err
}

// readHeaderAt reads and parses the header of the batch at pos of f without
// checking its CRC; limit is the file size.
func readHeaderAt(f io.ReaderAt, pos, limit int64) (batch.Header, error) {
	if limit-pos < batch.HeaderSize {
		return batch.Header{}, batch.ErrShort
	}
	var b [batch.HeaderSize]byte
	if _, err := f.ReadAt(b[:], pos); err != nil {
		return batch.Header{}, err
	}
	return batch.ParseHeader(b[:])
}

// syncError is a failed fsync of a segment file or of the log's directory. Unlike
// a failed write it is latched (see Log.fail and docs/durability.md).
type syncError struct {
	path string
	err  error
}

func (e *syncError) Error() string { return fmt.Sprintf("logstore: sync %s: %v", e.path, e.err) }

func (e *syncError) Unwrap() error { return e.err }

// syncFile fdatasyncs f: its data and the metadata needed to read it back (its
// size). An interrupted call is repeated; a failure is a *syncError.
func syncFile(f vfs.File, path string) error {
	for {
		err := f.SyncData()
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EINTR) {
			return &syncError{path: path, err: err}
		}
	}
}

// syncDir fsyncs the log's directory (entries created or removed in it); a
// failure is a *syncError.
func (l *Log) syncDir() error {
	d, err := l.fs.OpenDir(l.dir)
	if err != nil {
		return fmt.Errorf("logstore: open %s: %w", l.dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &syncError{path: l.dir, err: err}
	}
	return nil
}

// truncater is a file that can be cut in place: vfs.Default's files (they embed
// *os.File) and crash-test filesystems' are.
type truncater interface{ Truncate(size int64) error }

// truncateFile cuts f to size bytes.
func truncateFile(f vfs.File, size int64) error {
	t, ok := f.(truncater)
	if !ok {
		return fmt.Errorf("logstore: files of type %T cannot be truncated", f)
	}
	return t.Truncate(size)
}
