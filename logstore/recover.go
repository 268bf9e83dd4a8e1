package logstore

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"

	"skiff/internal/batch"
)

// recover builds the in-memory state of a log from its directory and index. It
// runs inside Open, before the Log is shared. See docs/format/segment.md,
// "Recovery".
func (l *Log) recover() error {
	bases, err := l.listSegments()
	if err != nil {
		return err
	}
	if len(bases) == 0 {
		// A new log (there is always an active segment): whatever the index holds is
		// left over from an older log of the same name.
		if err := l.idx.Delete(); err != nil {
			return fmt.Errorf("reset index: %w", err)
		}
	}
	metas, err := l.idx.Segments()
	if err != nil {
		return fmt.Errorf("read segment index: %w", err)
	}
	metaBy := make(map[int64]SegmentMeta, len(metas))
	for _, m := range metas {
		metaBy[m.BaseOffset] = m
	}
	rp, err := l.idx.RecoveryPoint()
	if err != nil {
		return fmt.Errorf("read recovery point: %w", err)
	}
	logStart, err := l.idx.LogStartOffset()
	if err != nil {
		return fmt.Errorf("read log start offset: %w", err)
	}

	// Index metadata of segments that have no file: drop it.
	for _, m := range metas {
		if !slices.Contains(bases, m.BaseOffset) {
			if err := l.idx.DeleteSegment(m.BaseOffset); err != nil {
				return fmt.Errorf("drop index of missing segment %d: %w", m.BaseOffset, err)
			}
		}
	}
	// Segments wholly below the log start offset are left over from a retention
	// pass that removed them from the index but not yet from the directory.
	for len(bases) > 1 && bases[1] <= logStart {
		l.log.Info("removing segment below the log start offset", "file", segmentName(bases[0]), "log_start_offset", logStart)
		if err := l.removeSegment(bases[0]); err != nil {
			return err
		}
		bases = bases[1:]
	}

	checked := map[*segment]bool{} // segments scanned: their data needs an fsync
	for i := 0; i < len(bases); i++ {
		base := bases[i]
		if n := len(l.mu.segs); n > 0 && l.mu.segs[n-1].next != base && !checked[l.mu.segs[n-1]] {
			// The segment before was trusted from its recorded metadata, which does
			// not agree with this file: check it before concluding anything.
			prev := l.mu.segs[n-1]
			l.mu.segs = l.mu.segs[:n-1]
			_ = prev.file.unref()
			delete(checked, prev)
			i -= 2
			metaBy[prev.base] = SegmentMeta{BaseOffset: -1} // matches no segment: checked this time
			continue
		}
		if n := len(l.mu.segs); n > 0 && l.mu.segs[n-1].next < base && l.mu.segs[n-1].next >= rp {
			// The segment before ends early, at or above the recovery point: it lost
			// a tail that was never synced, while the next segment's directory entry
			// survived (a power failure can do that). As after damage, the later
			// segments no longer follow and go, the last one first.
			prev := l.mu.segs[n-1]
			for j := len(bases) - 1; j >= i; j-- {
				l.log.Warn("removing segment that no longer follows the log (the unsynced end of the segment before was lost)",
					"file", segmentName(bases[j]), "expected_base_offset", prev.next)
				if err := l.removeSegment(bases[j]); err != nil {
					return err
				}
			}
			if err := l.syncDir(); err != nil {
				return err
			}
			break
		}
		if n := len(l.mu.segs); n > 0 && l.mu.segs[n-1].next != base {
			// The segment before is whole (a damaged one ends the loop below), and
			// the missing offsets were synced (below the recovery point), so a file
			// is missing (or misnamed): serving the log would show a hole, and
			// removing the later files would lose their records. Leave it all as it is.
			prev := l.mu.segs[n-1]
			if base < prev.next {
				return fmt.Errorf("%w: %s ends at offset %d, but the next segment file is %s, which overlaps it", ErrSegmentMissing,
					segmentName(prev.base), prev.next, segmentName(base))
			}
			return fmt.Errorf("%w: %s ends at offset %d, but the next segment file is %s: offsets %d..%d are missing (restore the missing segment, or remove the files from %s on to give up their records)",
				ErrSegmentMissing, segmentName(prev.base), prev.next, segmentName(base), prev.next, base-1, segmentName(base))
		}
		s, fileSize, scanned, damage, err := l.recoverSegment(base, metaBy[base], rp)
		if err != nil {
			return err
		}
		checked[s] = scanned
		l.mu.segs = append(l.mu.segs, s)
		if damage == nil {
			continue
		}
		// The later segments no longer follow this one. They go first, the last one
		// first, and the damaged file is cut only once their removal is durable: a
		// crash in between leaves a log whose damage the next recovery finds again,
		// never a whole segment followed by a hole.
		later := bases[i+1:]
		for j := len(later) - 1; j >= 0; j-- {
			l.log.Warn("removing segment that follows a damaged one", "file", segmentName(later[j]), "expected_base_offset", s.next)
			if err := l.removeSegment(later[j]); err != nil {
				return err
			}
		}
		if len(later) > 0 {
			if err := l.syncDir(); err != nil {
				return err
			}
		}
		l.log.Warn("truncating damaged segment", "file", s.file.path, "position", s.size, "bytes_dropped", fileSize-s.size, "err", damage)
		if err := truncateFile(s.file.f, s.size); err != nil {
			return fmt.Errorf("truncate %s: %w", s.file.path, err)
		}
		break
	}

	if len(l.mu.segs) == 0 || l.mu.segs[len(l.mu.segs)-1].next < logStart {
		// Nothing (readable) left at or above the log start offset: start empty there.
		for _, s := range l.mu.segs {
			l.log.Warn("removing segment below the log start offset", "file", segmentName(s.base), "log_start_offset", logStart)
			_ = s.file.unref()
			if err := l.removeSegment(s.base); err != nil {
				return err
			}
		}
		l.mu.segs = nil
		s, err := l.createSegment(logStart, true)
		if err != nil {
			return err
		}
		l.mu.segs = append(l.mu.segs, s)
		metaBy[s.base] = s.meta()
	}
	logStart = max(logStart, l.mu.segs[0].base)

	// Every segment but the last is closed; make sure what recovery checked is on
	// disk before recording it as such.
	last := len(l.mu.segs) - 1
	for i, s := range l.mu.segs {
		m, ok := metaBy[s.base]
		closed := i < last
		if checked[s] {
			if err := syncFile(s.file.f, s.file.path); err != nil {
				return err
			}
		}
		s.closed = closed
		if !ok || m != s.meta() {
			if err := l.idx.PutSegment(s.meta()); err != nil {
				return fmt.Errorf("record segment %d: %w", s.base, err)
			}
		}
	}
	if err := l.syncDir(); err != nil { // removals above
		return err
	}
	if err := l.idx.SetLogStartOffset(logStart); err != nil {
		return fmt.Errorf("record log start offset: %w", err)
	}
	act := l.active()
	if err := l.idx.SetRecoveryPoint(act.next, false); err != nil {
		return fmt.Errorf("record recovery point: %w", err)
	}
	l.recoveryPoint = act.next
	l.synced.Store(act.next)

	// Appends continue the active segment's index interval.
	l.bytesSinceIndex = act.size
	if e, ok, err := l.idx.LookupOffset(act.base, math.MaxInt64); err != nil {
		return fmt.Errorf("read index: %w", err)
	} else if ok {
		l.bytesSinceIndex = act.size - e.Pos
	}
	l.logStart.Store(logStart)
	l.publishLocked()
	return nil
}

// listSegments returns the base offsets of the segment files, ascending.
func (l *Log) listSegments() ([]int64, error) {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	for _, name := range names {
		base, ok := parseSegmentName(name)
		if !ok {
			continue // not ours (leader-epochs and the like)
		}
		if fi, err := l.fs.Stat(l.fs.PathJoin(l.dir, name)); err != nil {
			return nil, err
		} else if !fi.Mode().IsRegular() {
			continue
		}
		bases = append(bases, base)
	}
	slices.Sort(bases)
	return bases, nil
}

// removeSegment deletes a segment's index data, then its file.
func (l *Log) removeSegment(base int64) error {
	if err := l.idx.DeleteSegment(base); err != nil {
		return fmt.Errorf("drop index of segment %d: %w", base, err)
	}
	if err := l.fs.Remove(l.segmentPath(base)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// createSegment creates (or empties) the segment file for base and records it in
// the index. With syncDir its directory entry is made durable at once; otherwise
// the next Sync does that. A file that cannot be created (a full disk) leaves
// nothing behind; a failed fsync of the directory is a *syncError (callers latch
// it).
func (l *Log) createSegment(base int64, syncDir bool) (*segment, error) {
	path := l.segmentPath(base)
	f, err := l.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		if f != nil {
			f.Close()
		}
		_ = l.fs.Remove(path)
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	l.dirChanges++
	if syncDir {
		if err := l.syncDir(); err != nil {
			f.Close()
			return nil, err
		}
		l.dirSynced = l.dirChanges
	}
	s := &segment{base: base, file: newSegFile(f, path), next: base, maxTs: -1, firstTs: -1}
	if err := l.idx.PutSegment(s.meta()); err != nil {
		l.log.Warn("recording a new segment in the index", "file", path, "err", err) // derived data: recovery finds the file
	}
	return s, nil
}

// recoverSegment opens one segment and establishes its size, next offset and
// timestamps. A segment whose recorded metadata matches the file and is known to
// be on disk (closed, or wholly below the recovery point) is trusted. Otherwise
// the segment is checked batch by batch from its last verifiable index entry at
// or below the recovery point (or from its start), and its index entries after
// that point are rebuilt. scanned reports whether the segment was checked; damage
// says why the bytes from s.size on (of fileSize) are not valid batches, in which
// case the caller cuts the file there.
func (l *Log) recoverSegment(base int64, m SegmentMeta, rp int64) (s *segment, fileSize int64, scanned bool, damage, err error) {
	path := l.segmentPath(base)
	f, err := l.fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, 0, false, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, false, nil, err
	}
	sf := newSegFile(f, path)
	s = &segment{base: base, file: sf, next: base, maxTs: -1, firstTs: -1}
	fileSize = fi.Size()
	defer func() {
		if err != nil {
			_ = sf.unref() // not s.file: an error return has set s to nil
		}
	}()

	if m.BaseOffset == base && m.Size == fileSize && (m.Closed || m.NextOffset <= rp) &&
		m.NextOffset >= base && (m.Size == 0) == (m.NextOffset == base) {
		if m.Size == 0 {
			s.closed = m.Closed
			return s, fileSize, false, nil, nil
		}
		if h, err := readHeaderAt(f, 0, fileSize); err == nil && h.BaseOffset == base {
			s.size, s.next, s.maxTs, s.closed = m.Size, m.NextOffset, m.MaxTimestamp, m.Closed
			s.firstTs = h.MaxTimestamp
			return s, fileSize, false, nil, nil
		}
		// The recorded metadata does not describe this file: check it.
	}

	// Where to start checking: the last index entry at or below the recovery point,
	// if the batch it points at is really there.
	start := IndexEntry{Offset: base, Pos: 0, MaxTimestampBefore: -1}
	if e, ok, err := l.idx.LookupOffset(base, rp); err != nil {
		return nil, 0, false, nil, fmt.Errorf("read index of segment %d: %w", base, err)
	} else if ok && e.Pos > 0 && e.Offset > base {
		if h, _, err := readBatch(f, e.Pos, fileSize, nil); err == nil && h.BaseOffset == e.Offset {
			start = e
		}
	}
	if err := l.idx.TruncateEntries(base, start.Offset+1); err != nil {
		return nil, 0, false, nil, fmt.Errorf("truncate index of segment %d: %w", base, err)
	}

	pos, next, maxTs := start.Pos, start.Offset, start.MaxTimestampBefore
	var bytesSince int64
	var buf []byte
	for pos < fileSize {
		var h batch.Header
		h, buf, err = readBatch(f, pos, fileSize, buf)
		if err == nil && h.BaseOffset != next {
			err = fmt.Errorf("base offset %d, expected %d", h.BaseOffset, next)
		}
		if err != nil {
			damage, err = err, nil
			break
		}
		if pos > 0 && bytesSince >= l.cfg.IndexIntervalBytes {
			if err := l.idx.PutEntry(base, IndexEntry{Offset: h.BaseOffset, Pos: pos, MaxTimestampBefore: maxTs}); err != nil {
				return nil, 0, false, nil, fmt.Errorf("rebuild index of segment %d: %w", base, err)
			}
			bytesSince = 0
		}
		bytesSince += h.Size()
		pos += h.Size()
		next = h.NextOffset()
		maxTs = max(maxTs, h.MaxTimestamp)
	}
	s.size, s.next, s.maxTs = pos, next, maxTs
	if pos > 0 {
		h, err := readHeaderAt(f, 0, pos)
		if err != nil {
			return nil, 0, false, nil, &CorruptionError{File: path, Pos: 0, Err: err}
		}
		s.firstTs = h.MaxTimestamp
	}
	return s, fileSize, true, damage, nil
}
