package logstore

// What the log cleaner (package compaction) needs from a log: the segments as
// they are, the batches of a sealed segment, and a way to replace a run of
// sealed segments by one rewritten segment that a crash at any point leaves
// either wholly in place or not at all (docs/format/segment.md, "Compaction").

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"

	"skiff/internal/batch"
)

// File name suffixes of a rewrite in progress; the rest of the name is the
// segment's. Must not change.
const (
	cleanedSuffix = segmentSuffix + ".cleaned" // being written; recovery removes it
	swapSuffix    = segmentSuffix + ".swap"    // complete and synced; recovery finishes the swap
)

func (l *Log) cleanedPath(base int64) string {
	return l.fs.PathJoin(l.dir, segmentName(base)+".cleaned")
}

func (l *Log) swapPath(base int64) string { return l.fs.PathJoin(l.dir, segmentName(base)+".swap") }

// SegmentInfo describes one segment of a log (Segments).
type SegmentInfo struct {
	Base           int64 // base offset, the file name
	Next           int64 // offset after its last batch (Base when empty)
	Size           int64 // bytes
	FirstTimestamp int64 // maxTimestamp of its first batch, -1 when empty
	MaxTimestamp   int64 // largest batch maxTimestamp, -1 when empty
	// Sealed: rolled and fdatasynced, so it never changes again except by a
	// Rewrite (or retention, truncation). The active segment is not sealed.
	Sealed bool
}

// Segments returns the log's segments, oldest first; the last is the active one.
func (l *Log) Segments() []SegmentInfo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]SegmentInfo, 0, len(l.mu.segs))
	for i, s := range l.mu.segs {
		out = append(out, SegmentInfo{Base: s.base, Next: s.next, Size: s.size, FirstTimestamp: s.firstTs,
			MaxTimestamp: s.maxTs, Sealed: i < len(l.mu.segs)-1 && s.closed && !s.unsynced})
	}
	return out
}

// CleanerPoint returns the log cleaner's first dirty offset: the cleaner has
// compacted the log below it (package compaction). It is at most the log end
// offset; it may be below the log start offset.
func (l *Log) CleanerPoint() int64 { return l.cleanerPoint.Load() }

// SetCleanerPoint records the cleaner's first dirty offset (in the index; a
// lost write only makes the cleaner compact a part again).
func (l *Log) SetCleanerPoint(offset int64) error {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	offset = min(offset, l.logEnd.Load())
	if err := l.idx.SetCleanerPoint(offset); err != nil {
		return fmt.Errorf("logstore: record cleaner point: %w", err)
	}
	l.cleanerPoint.Store(offset)
	return nil
}

// lowerCleanerPointLocked keeps the cleaner point at most end after a
// truncation; the caller holds cleanMu.
func (l *Log) lowerCleanerPointLocked(end int64) error {
	if l.cleanerPoint.Load() <= end {
		return nil
	}
	l.cleanerPoint.Store(end)
	return l.idx.SetCleanerPoint(end)
}

// ErrSegmentsChanged: the segments a Rewrite replaces or a ScanSegment reads are
// no longer in the log as they were (retention, a truncation or Close came
// first). Nothing was changed; the cleaner tries again later.
var ErrSegmentsChanged = errors.New("logstore: segments changed under the cleaner")

// scanChunk is how much of a segment ScanSegment reads at a time.
const scanChunk = 1 << 20

// ScanSegment calls fn with every batch of the sealed segment with base offset
// base, in order; each is checked (batch.Check, offsets growing) and its bytes
// are valid only during the call. It stops at and returns fn's first error. It
// holds the file open while it reads, so retention or a Rewrite meanwhile does
// not disturb it.
func (l *Log) ScanSegment(base int64, fn func(h batch.Header, b []byte) error) error {
	return l.ScanSegmentSkipping(base, nil, fn)
}

// ScanSegmentSkipping is ScanSegment, except that a batch for which skip
// (when not nil) returns true is passed to fn with nil bytes: of it only the
// header was read and checked (its length, record count and offsets), not its
// CRC; and when the batches are large (scanSkipMin) its records are not read
// at all. The log cleaner's rewrite skips the batches it drops whole.
func (l *Log) ScanSegmentSkipping(base int64, skip func(h *batch.Header) bool, fn func(h batch.Header, b []byte) error) error {
	l.mu.RLock()
	i := slices.IndexFunc(l.mu.segs, func(s *segment) bool { return s.base == base })
	if l.mu.closed || i < 0 || i == len(l.mu.segs)-1 {
		l.mu.RUnlock()
		return fmt.Errorf("%w: no sealed segment %d", ErrSegmentsChanged, base)
	}
	s := l.mu.segs[i]
	sf, size := s.file, s.size
	l.mu.RUnlock()
	f, err := sf.acquire()
	if errors.Is(err, errFileGone) {
		return fmt.Errorf("%w: segment %d removed", ErrSegmentsChanged, base)
	} else if err != nil {
		return fmt.Errorf("logstore: open %s: %w", sf.path, err)
	}
	defer sf.release()
	return scanBatches(f, sf.path, size, base, skip, fn)
}

// scanBatches is ScanSegmentSkipping of the size bytes of f, a segment file at
// path of base offset base. A batch that does not fit in size, a short or bad
// header, skipped or not, is a *CorruptionError.
func scanBatches(f io.ReaderAt, path string, size, base int64, skip func(h *batch.Header) bool, fn func(h batch.Header, b []byte) error) error {
	sc := segScanner{cr: chunkReader{f: f, size: size, buf: make([]byte, 0, scanChunk)}, skip: skip}
	pos, expect := int64(0), base
	for pos < size {
		h, b, err := sc.next(pos)
		if err == nil {
			err = checkBase(path, pos, &h, expect, false)
		}
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				err = &CorruptionError{File: path, Pos: pos, Err: err}
			}
			return err
		}
		if err := fn(h, b); err != nil {
			return err
		}
		pos += h.Size()
		expect = h.NextOffset()
	}
	return nil
}

// scanSkipMin is the batch size from which a scan that skips batches reads the
// next batch's header alone before its bytes: below it, one chunk read covers
// many batches and costs less than a read per header.
const scanSkipMin = 64 << 10

// segScanner reads the batches of a segment file for ScanSegmentSkipping.
type segScanner struct {
	cr   chunkReader
	skip func(h *batch.Header) bool
	last int64 // size of the batch before
}

// next returns the header of the batch at pos and its bytes, nil when skipped.
// When it may skip, it reads the header first: from the chunk read if that
// holds it, alone if the batch before was large, else with a new chunk.
func (s *segScanner) next(pos int64) (batch.Header, []byte, error) {
	if s.skip != nil {
		if !s.cr.holds(pos, batch.HeaderSize) && s.last < scanSkipMin {
			if err := s.cr.fill(pos, batch.HeaderSize); err != nil {
				return batch.Header{}, nil, err
			}
		}
		var h batch.Header
		var err error
		if s.cr.holds(pos, batch.HeaderSize) {
			h, err = batch.ParseHeader(s.cr.buf[pos-s.cr.off:])
		} else {
			h, err = readHeaderAt(s.cr.f, pos, s.cr.size)
		}
		if err == nil {
			err = checkSkipped(&h, pos, s.cr.size)
		}
		if err != nil {
			return h, nil, err
		}
		s.last = h.Size()
		if s.skip(&h) {
			return h, nil, nil
		}
	}
	b, err := s.cr.batchAt(pos)
	if err != nil {
		return batch.Header{}, nil, err
	}
	h, err := batch.Check(b)
	return h, b, err
}

// checkSkipped checks what Check would of a batch at pos whose bytes are not
// read, but its CRC: that it lies within the file's size and its record count
// fits its offsets.
func checkSkipped(h *batch.Header, pos, size int64) error {
	if h.Size() < batch.HeaderSize || h.Size() > size-pos {
		return fmt.Errorf("%w: batch of %d bytes at %d, file of %d", batch.ErrLength, h.Size(), pos, size)
	}
	if h.RecordCount < 0 || h.LastOffsetDelta < 0 || h.RecordCount > h.LastOffsetDelta+1 {
		return fmt.Errorf("%w: lastOffsetDelta %d, recordCount %d", batch.ErrRecordCount, h.LastOffsetDelta, h.RecordCount)
	}
	return nil
}

// chunkReader reads a file's batches in large chunks: one read for many small
// batches.
type chunkReader struct {
	f    io.ReaderAt
	size int64  // bytes of the file to read
	buf  []byte // the file's bytes from off on
	off  int64
}

// batchAt returns the bytes of the whole batch at pos (valid until the next
// call); pos never goes back.
func (c *chunkReader) batchAt(pos int64) ([]byte, error) {
	if err := c.fill(pos, batch.LogOverhead); err != nil {
		return nil, err
	}
	i := pos - c.off
	n := int64(int32(binary.BigEndian.Uint32(c.buf[i+8:]))) + batch.LogOverhead
	if n < batch.HeaderSize {
		return nil, fmt.Errorf("%w: batchLength %d", batch.ErrLength, n-batch.LogOverhead)
	}
	if err := c.fill(pos, n); err != nil {
		return nil, err
	}
	i = pos - c.off
	return c.buf[i : i+n], nil
}

// holds reports whether buf holds the n bytes at pos.
func (c *chunkReader) holds(pos, n int64) bool {
	return pos >= c.off && pos+n <= c.off+int64(len(c.buf))
}

// fill makes sure buf holds the n bytes at pos.
func (c *chunkReader) fill(pos, n int64) error {
	if c.holds(pos, n) {
		return nil
	}
	if n > c.size-pos {
		return fmt.Errorf("%w: %d bytes needed at %d, file of %d", batch.ErrShort, n, pos, c.size)
	}
	keep := 0
	if pos >= c.off && pos < c.off+int64(len(c.buf)) {
		keep = copy(c.buf[:cap(c.buf)], c.buf[pos-c.off:])
	}
	if int64(cap(c.buf)) < n {
		nb := make([]byte, keep, n)
		copy(nb, c.buf[:keep])
		c.buf = nb
	}
	c.buf, c.off = c.buf[:keep], pos
	want := min(int64(cap(c.buf)), c.size-pos)
	if _, err := c.f.ReadAt(c.buf[keep:want], pos+int64(keep)); err != nil {
		return err
	}
	c.buf = c.buf[:want]
	return nil
}

// A Rewrite replaces a run of consecutive sealed segments by one new segment
// holding some of their batches (the log cleaner's output): same first base
// offset, same end (the new segment's last batch must end where the run did, so
// that segment files still tile the offsets), batches in offset order. It is
// written beside the originals as <base>.log.cleaned and swapped in by Commit;
// Abort, or a crash before the swap, leaves the originals as they were. A
// Rewrite is used by one goroutine.
type Rewrite struct {
	l    *Log
	srcs []*segment // the segments replaced
	view []segment  // their state when the Rewrite began
	base int64
	end  int64
	file vfs.File
	path string // of the .cleaned file

	buf        []byte // appended bytes not yet written
	written    int64  // bytes written to the file
	flushedTo  int64  // bytes handed to writeback (SyncTo)
	size       int64  // bytes appended (written + buffered)
	next       int64  // offset after the last appended batch
	firstTs    int64
	maxTs      int64
	bytesSince int64
	// indexInterval is the log's IndexIntervalBytes when the rewrite began
	// (SetConfig may change the log's while it runs).
	indexInterval int64
	entries       []IndexEntry
	done          bool
}

// rewriteBuf is how many appended bytes a Rewrite collects before a write.
const rewriteBuf = 1 << 20

// rewriteWriteback is how many written bytes a Rewrite lets accumulate before it
// starts their writeback (SyncTo: sync_file_range on Linux), so that the
// fdatasync of Commit is short and does not hold up the fsyncs of appends.
const rewriteWriteback = 8 << 20

// BeginRewrite starts replacing the sealed segments with the given base offsets,
// which must be consecutive segments of the log, ascending, none of them the
// active one.
func (l *Log) BeginRewrite(bases []int64) (*Rewrite, error) {
	if len(bases) == 0 {
		return nil, errors.New("logstore: rewrite of no segment")
	}
	l.mu.RLock()
	i := slices.IndexFunc(l.mu.segs, func(s *segment) bool { return s.base == bases[0] })
	ok := !l.mu.closed && i >= 0 && i+len(bases) < len(l.mu.segs) // the active segment is not replaced
	var r *Rewrite
	if ok {
		r = &Rewrite{l: l, base: bases[0], firstTs: -1, maxTs: -1, next: bases[0], indexInterval: l.cfg.IndexIntervalBytes}
		for k, base := range bases {
			s := l.mu.segs[i+k]
			if s.base != base || !s.closed || s.unsynced {
				ok = false
				break
			}
			r.srcs = append(r.srcs, s)
			r.view = append(r.view, *s)
		}
		if ok {
			r.end = r.srcs[len(r.srcs)-1].next
		}
	}
	l.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: segments %v are not consecutive sealed segments", ErrSegmentsChanged, bases)
	}
	r.path = l.cleanedPath(r.base)
	f, err := l.fs.Create(r.path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("logstore: create %s: %w", r.path, err)
	}
	r.file = f
	return r, nil
}

// End is the offset the rewritten segment must end at: the next offset of the
// last segment it replaces.
func (r *Rewrite) End() int64 { return r.end }

// Append adds one whole batch (checked by the caller, as ScanSegment hands them
// over or batch.Rebuild writes them) whose offsets follow the batches appended
// before and end by End.
func (r *Rewrite) Append(b []byte) error {
	h, err := batch.ParseHeader(b)
	if err == nil && h.Size() != int64(len(b)) {
		err = batch.ErrLength
	}
	if err == nil && (h.BaseOffset < r.next || h.NextOffset() > r.end) {
		err = fmt.Errorf("batch %d..%d outside %d..%d", h.BaseOffset, h.LastOffset(), r.next, r.end-1)
	}
	if err != nil {
		return fmt.Errorf("logstore: rewrite of segment %d: %w", r.base, err)
	}
	if r.size > 0 && r.bytesSince >= r.indexInterval {
		r.entries = append(r.entries, IndexEntry{Offset: h.BaseOffset, Pos: r.size, MaxTimestampBefore: r.maxTs})
		r.bytesSince = 0
	}
	if r.size == 0 {
		r.firstTs = h.MaxTimestamp
	}
	r.bytesSince += h.Size()
	r.size += h.Size()
	r.maxTs = max(r.maxTs, h.MaxTimestamp)
	r.next = h.NextOffset()
	r.buf = append(r.buf, b...)
	if len(r.buf) >= rewriteBuf {
		return r.flush()
	}
	return nil
}

func (r *Rewrite) flush() error {
	if len(r.buf) == 0 {
		return nil
	}
	if _, err := r.file.WriteAt(r.buf, r.written); err != nil {
		return fmt.Errorf("logstore: write %s: %w", r.path, err)
	}
	r.written += int64(len(r.buf))
	r.buf = r.buf[:0]
	if r.written-r.flushedTo >= rewriteWriteback {
		if _, err := r.file.SyncTo(r.written); err != nil {
			return fmt.Errorf("logstore: write back %s: %w", r.path, err)
		}
		r.flushedTo = r.written
	}
	return nil
}

// Abort drops the rewrite: the .cleaned file is removed and the log is as it
// was. It is idempotent, and does nothing after Commit.
func (r *Rewrite) Abort() error {
	if r.done {
		return nil
	}
	r.done = true
	err := r.file.Close()
	if rerr := r.l.fs.Remove(r.path); err == nil {
		err = rerr
	}
	return err
}

// Commit swaps the rewritten segment in for the ones it replaces, if they are
// still in the log as they were (ErrSegmentsChanged otherwise, and the rewrite
// is dropped). In this order, each step durable before the next:
//
//  1. the new file is fdatasynced and the replaced segments' index data dropped;
//  2. <base>.log.cleaned is renamed to <base>.log.swap (the commit point: from
//     here on recovery finishes the swap);
//  3. the replaced files after the first are removed;
//  4. <base>.log.swap is renamed to <base>.log, replacing the first;
//
// then the log serves the new segment and its index data is recorded. Readers
// holding the replaced files keep reading them until they let go. A failed fsync
// is latched (Failed); a failure after the commit point leaves the swap to
// recovery and latches too.
func (r *Rewrite) Commit() error {
	if r.done {
		return errors.New("logstore: rewrite committed twice")
	}
	l := r.l
	if r.next != r.end {
		r.Abort()
		return fmt.Errorf("logstore: rewrite of segment %d ends at %d, not at %d", r.base, r.next, r.end)
	}
	if err := r.flush(); err != nil {
		r.Abort()
		return err
	}
	if err := syncFile(r.file, r.path); err != nil {
		r.Abort()
		return err // the log's own files are untouched: nothing to latch
	}

	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.appendMu.Lock()
	err := l.writableLocked()
	if err == nil && !r.unchangedLocked() {
		err = fmt.Errorf("%w: segments %d..%d", ErrSegmentsChanged, r.base, r.end-1)
	}
	l.appendMu.Unlock()
	if err != nil {
		r.Abort()
		return err
	}
	// The replaced segments, retention, truncation and Close wait for cleanMu,
	// so the segments stay as checked; appends only touch the active segment.
	// Their files are held open (pinned) across the renames, so that a reader
	// that opens one meanwhile gets the replaced file, not the one renamed over
	// it; they are retired once the log no longer lists them (or, if the swap
	// fails, when the log closes). A pin opens a file that readers opened
	// read-only again for writing: one open more per replaced file.
	if err := r.pinSources(); err != nil {
		r.Abort()
		return err
	}
	for _, s := range r.srcs {
		if err := l.idx.DeleteSegment(s.base); err != nil {
			r.unpinSources()
			r.Abort()
			return fmt.Errorf("logstore: rewrite: drop index of segment %d: %w", s.base, err)
		}
	}
	swap := l.swapPath(r.base)
	if err := l.fs.Rename(r.path, swap); err != nil {
		r.unpinSources()
		r.Abort()
		return fmt.Errorf("logstore: rewrite: rename %s: %w", r.path, err)
	}
	r.done = true
	if err := r.swap(swap); err != nil {
		r.file.Close()
		l.appendMu.Lock()
		defer l.appendMu.Unlock()
		return l.latchLocked(fmt.Errorf("logstore: rewrite of segment %d stopped after its commit point (the next Open finishes it): %w", r.base, err))
	}

	sf := newOpenSegFile(l.cfg.Files, l.fs, r.file, l.segmentPath(r.base))
	seg := &segment{base: r.base, file: sf, size: r.size, next: r.next, maxTs: r.maxTs, firstTs: r.firstTs, closed: true}
	l.appendMu.Lock()
	l.mu.Lock()
	i := slices.Index(l.mu.segs, r.srcs[0])
	l.mu.segs = slices.Replace(l.mu.segs, i, i+len(r.srcs), seg)
	l.listGen.Add(1)
	l.publishLocked()
	l.mu.Unlock()
	l.appendMu.Unlock()
	_ = sf.release() // to the cache

	var errs []error
	errs = append(errs, l.idx.PutSegment(seg.meta()))
	for _, e := range r.entries {
		errs = append(errs, l.idx.PutEntry(seg.base, e))
	}
	for _, s := range r.srcs {
		_ = s.file.retire() // open until the last reader lets go
	}
	if err := errors.Join(errs...); err != nil {
		l.log.Warn("recording a rewritten segment in the index", "file", seg.file.path, "err", err) // derived data
	}
	return nil
}

// pinSources holds the replaced segments' files open (see Commit); on failure
// none is left pinned. The caller holds cleanMu.
func (r *Rewrite) pinSources() error {
	for k, s := range r.srcs {
		if err := s.file.pin(); err != nil {
			for _, p := range r.srcs[:k] {
				_ = p.file.unpin()
			}
			return fmt.Errorf("logstore: rewrite: open %s: %w", s.file.path, err)
		}
	}
	return nil
}

// unpinSources undoes pinSources.
func (r *Rewrite) unpinSources() {
	for _, s := range r.srcs {
		_ = s.file.unpin()
	}
}

// unchangedLocked reports whether the replaced segments are still in the log,
// consecutive and as they were when the rewrite began; the caller holds appendMu.
func (r *Rewrite) unchangedLocked() bool {
	segs := r.l.mu.segs
	i := slices.Index(segs, r.srcs[0])
	if i < 0 || i+len(r.srcs) >= len(segs) {
		return false
	}
	for k, s := range r.srcs {
		v := &r.view[k]
		if segs[i+k] != s || s.size != v.size || s.next != v.next || !s.closed || s.unsynced {
			return false
		}
	}
	return true
}

// swap carries out steps 2 to 4 of Commit after the rename to swap, the path of
// the .swap file. The caller holds cleanMu.
func (r *Rewrite) swap(swap string) error {
	l := r.l
	if err := l.syncDir(); err != nil {
		return err
	}
	if len(r.srcs) > 1 {
		for k := len(r.srcs) - 1; k >= 1; k-- {
			if err := l.fs.Remove(r.srcs[k].file.path); err != nil {
				return fmt.Errorf("logstore: rewrite: remove %s: %w", r.srcs[k].file.path, err)
			}
		}
		if err := l.syncDir(); err != nil {
			return err
		}
	}
	if err := l.fs.Rename(swap, l.segmentPath(r.base)); err != nil {
		return fmt.Errorf("logstore: rewrite: rename %s: %w", swap, err)
	}
	l.log.Info("swapped in a compacted segment", "file", l.segmentPath(r.base), "replaced_segments", len(r.srcs),
		"end_offset", r.end, "size", r.size)
	return l.syncDir()
}
