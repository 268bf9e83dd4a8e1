package logstore

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/cockroachdb/pebble/v2/vfs"

	"skiff/internal/batch"
)

// Range is a byte range of a segment file holding whole batches, for sendfile.
type Range struct {
	// File reads the segment. A segment on an OS filesystem (vfs.Default) is a file
	// that also implements syscall.Conn, which sendfile needs; a segment on another
	// filesystem (the in-memory ones of crash tests) is not, and is copied
	// (io.NewSectionReader(File, Pos, Len)).
	File       io.ReaderAt
	Pos, Len   int64
	BaseOffset int64 // base offset of the first batch in the range
}

// Slice is the result of Read: whole batches as file ranges, in offset order. The
// files stay open until Release is called, even if the segments are deleted
// meanwhile. A Slice is not safe for concurrent use.
type Slice struct {
	Ranges     []Range
	Bytes      int64 // sum of the ranges' lengths
	NextOffset int64 // offset after the last batch; the requested offset if empty

	files []*segFile
}

// Release lets go of the files. It is idempotent; the ranges must not be used
// after it.
func (s *Slice) Release() {
	for _, f := range s.files {
		_ = f.release()
	}
	s.files = nil
	s.Ranges = nil
}

// SealedFiles returns how many of the files the slice holds are not pinned
// (sealed segments, not the active one): descriptors that stay open because
// the slice holds them, which the FileCache's capacity does not bound until
// Release.
func (s *Slice) SealedFiles() int {
	n := 0
	for _, f := range s.files {
		f.mu.Lock()
		if !f.pinned {
			n++
		}
		f.mu.Unlock()
	}
	return n
}

// WriteTo copies the slice's bytes to w (for tests and for connections that
// cannot use sendfile).
func (s *Slice) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, r := range s.Ranges {
		m, err := io.Copy(w, io.NewSectionReader(r.File, r.Pos, r.Len))
		n += m
		if err != nil {
			return n, err
		}
		if m != r.Len {
			return n, fmt.Errorf("logstore: segment of base offset %d truncated under a slice: %d of %d bytes", r.BaseOffset, m, r.Len)
		}
	}
	return n, nil
}

// view is a reader's snapshot of one segment. Its file is acquired (open) only
// when the reader gets to it (open).
type view struct {
	base  int64
	file  *segFile
	size  int64
	next  int64
	maxTs int64

	f vfs.File // set by open, until the reader releases it
}

// open acquires v's file; see Log.acquire.
func (v *view) open(l *Log, listGen uint64) error {
	f, err := l.acquire(v.file, listGen)
	v.f = f
	return err
}

// release lets go of the file if open acquired it.
func (v *view) release() {
	if v.f != nil {
		_ = v.file.release()
		v.f = nil
	}
}

func releaseViews(vs []view) {
	for i := range vs {
		vs[i].release()
	}
}

// errRetry: a Truncate ran during the read, or a segment the reader wanted left
// the log; start over.
var errRetry = errors.New("logstore: retry")

// acquire opens a reader's segment file sf, which was in the list as of
// listGen. A file retired since (errFileGone) left the list, or is about to
// (truncateFullyLocked retires before it replaces the list): the reader waits
// for the writer, which holds cleanMu, and starts over, unless the list did not
// change (that writer failed), which is an error.
func (l *Log) acquire(sf *segFile, listGen uint64) (vfs.File, error) {
	f, err := sf.acquire()
	if err == nil || !errors.Is(err, errFileGone) {
		if err != nil {
			err = fmt.Errorf("logstore: open %s: %w", sf.path, err)
		}
		return f, err
	}
	if l.listGen.Load() == listGen {
		l.cleanMu.Lock()
		//lint:ignore SA2001 an empty critical section: waiting for the writer that retired the file
		l.cleanMu.Unlock()
	}
	if l.listGen.Load() != listGen {
		return nil, errRetry
	}
	return nil, fmt.Errorf("logstore: read %s: %w", sf.path, err)
}

// snapshotLocked returns views of the segments from the one containing offset on
// (all segments if offset is below the first), and the list generation they
// are of. The caller holds mu.
func (l *Log) snapshotLocked(offset int64) ([]view, uint64) {
	segs := l.mu.segs
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset }) - 1
	i = max(i, 0)
	vs := make([]view, 0, len(segs)-i)
	for _, s := range segs[i:] {
		vs = append(vs, view{base: s.base, file: s.file, size: s.size, next: s.next, maxTs: s.maxTs})
	}
	return vs, l.listGen.Load()
}

// ringLookupLocked returns the latest in-memory index entry at or below offset of
// the active segment. The caller holds mu.
func (l *Log) ringLookupLocked(offset int64) (IndexEntry, bool) {
	r := l.mu.ring
	i := sort.Search(len(r), func(i int) bool { return r[i].Offset > offset })
	if i == 0 {
		return IndexEntry{}, false
	}
	return r[i-1], true
}

// locate finds the first batch of v whose offsets reach offset (the batch that
// contains it, or the first one after a gap that does), starting at the index
// entry hint if ok. It returns that batch's position and header.
func (l *Log) locate(v *view, hr *headerReader, offset int64, hint IndexEntry, ok bool, gen uint64) (int64, batch.Header, error) {
	pos, expect := int64(0), v.base
	exact := false // the batch at pos must start at expect: an index entry names it
	if ok && hint.Pos > 0 && hint.Pos < v.size && hint.Offset <= offset {
		pos, expect, exact = hint.Pos, hint.Offset, true
	}
	for {
		h, err := hr.header(pos)
		if err == nil {
			err = checkBase(v.file.path, pos, &h, expect, exact)
		}
		if err != nil {
			if l.gen.Load() != gen {
				return 0, h, errRetry
			}
			if exact {
				// A stale index entry (the index is derived data): scan from the start.
				pos, expect, exact = 0, v.base, false
				continue
			}
			return 0, h, err
		}
		if h.NextOffset() > offset {
			return pos, h, nil
		}
		pos += h.Size()
		expect, exact = h.NextOffset(), false
	}
}

// checkBase reports a batch at pos whose base offset does not follow the batch
// before it: below expect (offsets must grow; a higher one is a gap, which
// compaction leaves), or other than expect when exact.
func checkBase(path string, pos int64, h *batch.Header, expect int64, exact bool) error {
	if h.BaseOffset < expect || exact && h.BaseOffset != expect {
		return &CorruptionError{File: path, Pos: pos, Err: fmt.Errorf("base offset %d, expected %d", h.BaseOffset, expect)}
	}
	return nil
}

// Read returns file ranges holding whole batches from the batch that contains
// offset on (or, if offset lies in a gap that compaction left, from the first
// batch after it), for sendfile. It stops before the first batch whose base offset is
// >= maxOffset (the caller's high watermark; pass LogEndOffset to read
// everything) and before a batch that would make the total pass maxBytes, except
// that the first batch is always returned whole however large (KIP-74). Ranges
// continue into later segments while the budget allows.
//
// An offset below LogStartOffset or above LogEndOffset is ErrOffsetOutOfRange; an
// offset equal to LogEndOffset gives an empty Slice. The caller must Release the
// Slice (also an empty one).
func (l *Log) Read(offset, maxBytes, maxOffset int64) (*Slice, error) {
	for {
		s, err := l.read(offset, maxBytes, maxOffset)
		if err != errRetry {
			return s, err
		}
	}
}

func (l *Log) read(offset, maxBytes, maxOffset int64) (*Slice, error) {
	l.mu.RLock()
	if l.mu.closed {
		l.mu.RUnlock()
		return nil, ErrClosed
	}
	start, end := l.logStart.Load(), l.logEnd.Load()
	if offset < start || offset > end {
		l.mu.RUnlock()
		return nil, fmt.Errorf("%w: offset %d, log start %d, log end %d", ErrOffsetOutOfRange, offset, start, end)
	}
	if offset == end {
		l.mu.RUnlock()
		return &Slice{NextOffset: offset}, nil
	}
	vs, listGen := l.snapshotLocked(offset)
	var hint IndexEntry
	hintOK := false
	if len(vs) == 1 {
		hint, hintOK = l.ringLookupLocked(offset)
	}
	gen := l.gen.Load()
	l.mu.RUnlock()

	used := 0 // views vs[:used] are held by the slice
	defer func() { releaseViews(vs[used:]) }()

	if !hintOK {
		var err error
		if hint, hintOK, err = l.idx.LookupOffset(vs[0].base, offset); err != nil {
			return nil, fmt.Errorf("logstore: read index: %w", err)
		}
	}
	if err := vs[0].open(l, listGen); err != nil {
		return nil, err
	}
	hr := newHeaderReader(vs[0].f, vs[0].file.path, vs[0].size)
	defer func() { hr.release() }()
	pos, first, err := l.locate(&vs[0], hr, offset, hint, hintOK, gen)
	if err != nil {
		return nil, err
	}

	s := &Slice{NextOffset: offset}
	expect := first.BaseOffset
	done := false
	for k := range vs {
		v := &vs[k]
		if k > 0 {
			if err := v.open(l, listGen); err != nil {
				s.Release()
				return nil, err
			}
			hr.release()
			hr = newHeaderReader(v.f, v.file.path, v.size)
			pos = 0
		}
		rangeStart := pos
		rangeBase := int64(-1)
		for pos < v.size {
			h, err := hr.header(pos)
			if err == nil {
				err = checkBase(v.file.path, pos, &h, expect, false)
			}
			if err != nil {
				s.Release()
				if l.gen.Load() != gen {
					return nil, errRetry
				}
				return nil, err
			}
			if h.BaseOffset >= maxOffset || (s.Bytes > 0 || pos > rangeStart) && s.Bytes+(pos-rangeStart)+h.Size() > maxBytes {
				done = true
				break
			}
			if rangeBase < 0 {
				rangeBase = h.BaseOffset
			}
			pos += h.Size()
			expect = h.NextOffset()
		}
		if n := pos - rangeStart; n > 0 {
			s.Ranges = append(s.Ranges, Range{File: v.f, Pos: rangeStart, Len: n, BaseOffset: rangeBase})
			s.Bytes += n
			s.NextOffset = expect
			s.files = append(s.files, v.file)
		} else {
			// Nothing of this segment is in the slice (the read stopped at its
			// first batch, or it is empty): the slice does not hold its file.
			v.release()
		}
		used = k + 1
		if done {
			break
		}
	}
	if l.gen.Load() != gen {
		s.Release()
		return nil, errRetry
	}
	return s, nil
}

// OffsetForTimestamp returns the base offset of the first batch whose
// maxTimestamp is >= ts, and that maxTimestamp (ListOffsets by timestamp); ok is
// false if there is no such batch. It finds the segment from the segments'
// largest timestamps, starts from the time index entry there and scans headers.
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool, err error) {
	for {
		offset, timestamp, ok, err = l.offsetForTimestamp(ts)
		if err != errRetry {
			return offset, timestamp, ok, err
		}
	}
}

func (l *Log) offsetForTimestamp(ts int64) (int64, int64, bool, error) {
	l.mu.RLock()
	if l.mu.closed {
		l.mu.RUnlock()
		return 0, 0, false, ErrClosed
	}
	start := l.logStart.Load()
	var from int64 = -1
	for _, s := range l.mu.segs {
		if s.maxTs >= ts && s.next > start {
			from = s.base
			break
		}
	}
	if from < 0 {
		l.mu.RUnlock()
		return 0, 0, false, nil
	}
	vs, listGen := l.snapshotLocked(from)
	gen := l.gen.Load()
	l.mu.RUnlock()
	defer releaseViews(vs)

	for k := range vs {
		v := &vs[k]
		if v.maxTs < ts || v.next <= start {
			continue
		}
		hint, ok, err := l.idx.LookupTimestamp(v.base, ts)
		if err != nil {
			return 0, 0, false, fmt.Errorf("logstore: read time index: %w", err)
		}
		if err := v.open(l, listGen); err != nil {
			return 0, 0, false, err
		}
		pos, expect := int64(0), v.base
		if ok && hint.Pos > 0 && hint.Pos < v.size {
			if h, err := readHeaderAt(v.f, hint.Pos, v.size); err == nil && h.BaseOffset == hint.Offset {
				pos, expect = hint.Pos, hint.Offset
			}
		}
		hr := newHeaderReader(v.f, v.file.path, v.size)
		for pos < v.size {
			h, err := hr.header(pos)
			if err == nil {
				err = checkBase(v.file.path, pos, &h, expect, false)
			}
			if err != nil {
				hr.release()
				if l.gen.Load() != gen {
					return 0, 0, false, errRetry
				}
				return 0, 0, false, err
			}
			if h.MaxTimestamp >= ts && h.NextOffset() > start {
				hr.release()
				if l.gen.Load() != gen {
					return 0, 0, false, errRetry
				}
				return max(h.BaseOffset, start), h.MaxTimestamp, true, nil
			}
			pos += h.Size()
			expect = h.NextOffset()
		}
		hr.release()
	}
	if l.gen.Load() != gen {
		return 0, 0, false, errRetry
	}
	return 0, 0, false, nil
}

// ScanHeaders calls fn with the header of every batch from the one containing
// from (or from the log start, if from is below it) to the log end as of the
// call, in order, without checking CRCs. It stops at and returns fn's first
// error. It is meant for rebuilding state when a partition is opened (idempotent
// producer state); a concurrent Truncate may make it fail with a CorruptionError.
func (l *Log) ScanHeaders(from int64, fn func(h batch.Header) error) error {
	l.mu.RLock()
	if l.mu.closed {
		l.mu.RUnlock()
		return ErrClosed
	}
	from = max(from, l.logStart.Load())
	if from >= l.logEnd.Load() {
		l.mu.RUnlock()
		return nil
	}
	vs, listGen := l.snapshotLocked(from)
	hint, hintOK := IndexEntry{}, false
	if len(vs) == 1 {
		hint, hintOK = l.ringLookupLocked(from)
	}
	gen := l.gen.Load()
	l.mu.RUnlock()
	defer releaseViews(vs)

	if !hintOK {
		var err error
		if hint, hintOK, err = l.idx.LookupOffset(vs[0].base, from); err != nil {
			return fmt.Errorf("logstore: read index: %w", err)
		}
	}
	if err := vs[0].open(l, listGen); err != nil {
		return scanGone(vs[0].file.path, 0, err)
	}
	hr := newHeaderReader(vs[0].f, vs[0].file.path, vs[0].size)
	pos, first, err := l.locate(&vs[0], hr, from, hint, hintOK, gen)
	hr.release()
	if err != nil {
		return scanGone(vs[0].file.path, pos, err)
	}
	expect := first.BaseOffset
	for k := range vs {
		v := &vs[k]
		if k > 0 {
			pos = 0
			if err := v.open(l, listGen); err != nil {
				return scanGone(v.file.path, 0, err)
			}
		}
		hr := newHeaderReader(v.f, v.file.path, v.size)
		for pos < v.size {
			h, err := hr.header(pos)
			if err == nil {
				err = checkBase(v.file.path, pos, &h, expect, false)
			}
			if err == nil {
				err = fn(h)
			}
			if err != nil {
				hr.release()
				return err
			}
			pos += h.Size()
			expect = h.NextOffset()
		}
		hr.release()
	}
	return nil
}

// scanGone turns a reader's errRetry into the CorruptionError ScanHeaders
// documents for a concurrent change of the log.
func scanGone(path string, pos int64, err error) error {
	if err == errRetry {
		return &CorruptionError{File: path, Pos: pos, Err: errors.New("log truncated during scan")}
	}
	return err
}
