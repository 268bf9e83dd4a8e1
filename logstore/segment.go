package logstore

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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

// segFile is an open segment file with a reference count. The Log holds one
// reference while the segment is in its list; every Slice and reader holds one
// while it uses the file. The descriptor is closed when the count drops to zero,
// never earlier, so it cannot be reused for another file under a pending read.
type segFile struct {
	f    *os.File
	path string
	refs atomic.Int32
}

func newSegFile(f *os.File, path string) *segFile {
	s := &segFile{f: f, path: path}
	s.refs.Store(1)
	return s
}

func (s *segFile) ref() { s.refs.Add(1) }

func (s *segFile) unref() error {
	switch n := s.refs.Add(-1); {
	case n == 0:
		return s.f.Close()
	case n < 0:
		panic("logstore: segment file reference count below zero")
	}
	return nil
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
}

func (s *segment) meta() SegmentMeta {
	return SegmentMeta{BaseOffset: s.base, Size: s.size, NextOffset: s.next, MaxTimestamp: s.maxTs, Closed: s.closed}
}

func segmentPath(dir string, base int64) string { return filepath.Join(dir, segmentName(base)) }

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
	sf    *segFile
	limit int64
	bufp  *[]byte
	off   int64 // file position of buf[0]
	n     int   // valid bytes in buf
	read  int64 // size of the next read
}

func newHeaderReader(sf *segFile, limit int64) *headerReader {
	return &headerReader{sf: sf, limit: limit, bufp: headerBufPool.Get().(*[]byte), read: headerReadMin}
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
		return batch.Header{}, &CorruptionError{File: r.sf.path, Pos: pos, Err: batch.ErrShort}
	}
	buf := *r.bufp
	if pos < r.off || pos+batch.HeaderSize > r.off+int64(r.n) {
		n := r.read
		r.read = min(2*r.read, headerReadMax)
		if rem := r.limit - pos; rem < n {
			n = rem
		}
		got, err := r.sf.f.ReadAt(buf[:n], pos)
		if int64(got) < batch.HeaderSize {
			if err == nil || err == io.EOF {
				err = batch.ErrShort
			}
			return batch.Header{}, &CorruptionError{File: r.sf.path, Pos: pos, Err: err}
		}
		r.off, r.n = pos, got
	}
	h, err := batch.ParseHeader(buf[pos-r.off:])
	if err != nil {
		return h, &CorruptionError{File: r.sf.path, Pos: pos, Err: err}
	}
	if pos+h.Size() > r.limit {
		return h, &CorruptionError{File: r.sf.path, Pos: pos, Err: batch.ErrLength}
	}
	return h, nil
}

// readBatch reads and fully checks (batch.Check) the batch at pos of f, whose
// size is fileSize. buf is reused when large enough. It returns the header, the
// batch bytes and an error describing why the bytes at pos are not a valid batch.
func readBatch(f *os.File, pos, fileSize int64, buf []byte) (batch.Header, []byte, error) {
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
func readHeaderAt(f *os.File, pos, limit int64) (batch.Header, error) {
	if limit-pos < batch.HeaderSize {
		return batch.Header{}, batch.ErrShort
	}
	var b [batch.HeaderSize]byte
	if _, err := f.ReadAt(b[:], pos); err != nil {
		return batch.Header{}, err
	}
	return batch.ParseHeader(b[:])
}
