package logstore

import (
	"errors"
	"fmt"
	"sort"
)

// Truncate removes the batch that contains offset and every batch after it, so
// that the log end offset becomes that batch's base offset (or the end of the
// batch before it, if a gap that compaction left lies between them): pass a
// batch boundary (as replication does, with leader-epoch start offsets) to
// truncate exactly at offset. An offset at or above the log end changes
// nothing. An offset below the first segment empties the log and starts it
// again at offset (the log start offset moves down to it), like Kafka's
// truncateFullyAndStartAt.
//
// Later segments are deleted, the segment holding offset is cut and becomes the
// active segment, and the index entries past the cut are removed. If the cut is
// below the recovery point, the lower recovery point is made durable first. The
// caller must make sure no unreleased Slice covers the removed bytes (a follower
// truncates only above its high watermark, which readers never pass).
func (l *Log) Truncate(offset int64) error {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	segs := l.mu.segs
	if offset >= l.active().next {
		return nil
	}
	if offset < segs[0].base {
		return l.truncateFullyLocked(offset)
	}
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset }) - 1
	s := segs[i]

	// Find the batch containing offset, and the segment's largest timestamp before it.
	hint, ok, err := l.idx.LookupOffset(s.base, offset)
	if err != nil {
		return fmt.Errorf("logstore: truncate: read index: %w", err)
	}
	// The segment cut becomes the active one: its file is pinned open (a sealed
	// one may have been closed by the cache).
	wasPinned := s == l.active() || s.unsynced
	if err := s.file.pin(); err != nil {
		return fmt.Errorf("logstore: truncate: open %s: %w", s.file.path, err)
	}
	undoPin := func() {
		if !wasPinned {
			_ = s.file.unpin()
		}
	}
	f := s.file.writable()
	pos, cut, maxTs := int64(0), s.base, int64(-1)
	if ok && hint.Pos > 0 && hint.Pos < s.size {
		if h, err := readHeaderAt(f, hint.Pos, s.size); err == nil && h.BaseOffset == hint.Offset {
			pos, cut, maxTs = hint.Pos, hint.Offset, hint.MaxTimestampBefore
		}
	}
	hr := newHeaderReader(f, s.file.path, s.size)
	for {
		h, err := hr.header(pos)
		if err != nil {
			hr.release()
			undoPin()
			return fmt.Errorf("logstore: truncate: %w", err)
		}
		if h.NextOffset() > offset {
			break
		}
		pos += h.Size()
		cut = h.NextOffset()
		maxTs = max(maxTs, h.MaxTimestamp)
	}
	hr.release()

	if cut < l.recoveryPoint {
		if err := l.setRecoveryPointLocked(cut, true); err != nil {
			undoPin()
			return fmt.Errorf("logstore: truncate: %w", err)
		}
	}
	l.log.Info("truncating log", "offset", offset, "new_log_end_offset", cut, "file", s.file.path, "position", pos)

	// Publish the cut before touching the file: a reader that snapshots after this
	// never reads past pos, and one that snapshotted before sees gen change.
	firstTs := s.firstTs
	if pos == 0 {
		firstTs = -1
	}
	later := segs[i+1:]
	l.mu.Lock()
	l.gen.Add(1)
	l.mu.segs = segs[:i+1]
	l.listGen.Add(1)
	l.mu.ring = l.mu.ring[:0]
	s.size, s.next, s.maxTs, s.firstTs, s.closed, s.unsynced = pos, cut, maxTs, firstTs, false, false
	l.logStart.Store(min(l.logStart.Load(), cut))
	l.publishLocked()
	l.mu.Unlock()

	// Later segments go first, the last one first, so that a crash leaves a log
	// that ends early (and is truncated again), never one with a hole.
	var errs []error
	for j := len(later) - 1; j >= 0; j-- {
		t := later[j]
		_ = t.file.retire() // before its name goes
		errs = append(errs, l.removeSegment(t.base))
	}
	if len(later) > 0 {
		if err := l.syncDir(); err != nil {
			return l.latchLocked(err)
		}
	}
	errs = append(errs, l.idx.TruncateEntries(s.base, cut))
	if err := truncateFile(f, pos); err != nil {
		return l.latchLocked(fmt.Errorf("logstore: truncate %s: %w", s.file.path, err))
	}
	w := l.written.Load()
	if err := syncFile(f, s.file.path); err != nil {
		return l.latchLocked(err)
	}
	l.markSyncedLocked(w)
	l.bytesSinceIndex = pos
	if e, ok, err := l.idx.LookupOffset(s.base, cut); err != nil {
		errs = append(errs, err)
	} else if ok {
		l.bytesSinceIndex = pos - e.Pos
	}
	errs = append(errs, l.idx.PutSegment(s.meta()), l.idx.SetLogStartOffset(l.logStart.Load(), false), l.lowerCleanerPointLocked(cut))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("logstore: truncate: %w", err)
	}
	return nil
}

// Reset removes every batch and starts an empty log at offset, above or below the
// current log end (a follower whose log ends before the leader's log start starts
// again at the leader's log start, Kafka's truncateFullyAndStartAt).
func (l *Log) Reset(offset int64) error {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	return l.truncateFullyLocked(offset)
}

// truncateFullyLocked removes every segment and starts an empty log at offset.
func (l *Log) truncateFullyLocked(offset int64) error {
	if err := l.setRecoveryPointLocked(offset, true); err != nil {
		return fmt.Errorf("logstore: truncate: %w", err)
	}
	l.log.Info("truncating log fully", "new_log_start_offset", offset)
	l.mu.Lock()
	l.gen.Add(1)
	old := l.mu.segs
	l.mu.Unlock()
	var errs []error
	for j := len(old) - 1; j >= 0; j-- { // the last one first: no hole if interrupted
		// Retired before its name goes (a new segment may take it): a reader
		// that finds it closed waits for cleanMu and starts over.
		_ = old[j].file.retire()
		errs = append(errs, l.removeSegment(old[j].base))
	}
	if err := errors.Join(errs...); err != nil {
		return l.latchLocked(fmt.Errorf("logstore: truncate: %w", err))
	}
	s, err := l.createSegment(offset, true)
	if err != nil {
		// The old segments are gone from the directory, and there is no active one.
		return l.latchLocked(fmt.Errorf("logstore: truncate: %w", err))
	}
	l.mu.Lock()
	l.gen.Add(1) // readers that snapshotted the old segments in between start over
	l.mu.segs = []*segment{s}
	l.listGen.Add(1)
	l.mu.ring = l.mu.ring[:0]
	l.logStart.Store(offset)
	l.publishLocked()
	l.mu.Unlock()
	l.bytesSinceIndex = 0
	l.markSyncedLocked(l.written.Load()) // nothing unsynced is left
	l.rolledUnsynced.Store(false)
	if err := errors.Join(l.idx.SetLogStartOffset(offset, false), l.lowerCleanerPointLocked(offset)); err != nil {
		return fmt.Errorf("logstore: truncate: %w", err)
	}
	return nil
}
