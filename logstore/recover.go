package logstore

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"skiff/internal/batch"
	"skiff/internal/fileutil"
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
		if n := len(l.mu.segs); n > 0 && l.mu.segs[n-1].next != base {
			// A hole (or overlap): everything from here on is unreachable.
			prev := l.mu.segs[n-1]
			for _, b := range bases[i:] {
				l.log.Warn("removing segment that does not follow the log", "file", segmentName(b),
					"expected_base_offset", prev.next)
				if err := l.removeSegment(b); err != nil {
					return err
				}
			}
			break
		}
		s, scanned, err := l.recoverSegment(base, metaBy[base], rp)
		if err != nil {
			return err
		}
		checked[s] = scanned
		l.mu.segs = append(l.mu.segs, s)
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
		s, err := l.createSegment(logStart)
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
			if err := fdatasync(s.file.f); err != nil {
				return fmt.Errorf("sync %s: %w", s.file.path, err)
			}
		}
		s.closed = closed
		if !ok || m != s.meta() {
			if err := l.idx.PutSegment(s.meta()); err != nil {
				return fmt.Errorf("record segment %d: %w", s.base, err)
			}
		}
	}
	if err := fileutil.SyncDir(l.dir); err != nil { // removals above
		return fmt.Errorf("sync dir: %w", err)
	}
	if err := l.idx.SetLogStartOffset(logStart); err != nil {
		return fmt.Errorf("record log start offset: %w", err)
	}
	act := l.active()
	if err := l.idx.SetRecoveryPoint(act.next, false); err != nil {
		return fmt.Errorf("record recovery point: %w", err)
	}
	l.recoveryPoint = act.next

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
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		base, ok := parseSegmentName(e.Name())
		if !ok {
			continue // not ours (leader-epochs and the like)
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
	if err := os.Remove(segmentPath(l.dir, base)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// createSegment creates (or empties) the segment file for base and records it.
func (l *Log) createSegment(base int64) (*segment, error) {
	path := segmentPath(l.dir, base)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if err := fileutil.SyncDir(l.dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("sync dir: %w", err)
	}
	s := &segment{base: base, file: newSegFile(f, path), next: base, maxTs: -1, firstTs: -1}
	if err := l.idx.PutSegment(s.meta()); err != nil {
		_ = s.file.unref()
		return nil, fmt.Errorf("record segment %d: %w", base, err)
	}
	return s, nil
}

// recoverSegment opens one segment and establishes its size, next offset and
// timestamps. A segment whose recorded metadata matches the file and is known to
// be on disk (closed, or wholly below the recovery point) is trusted. Otherwise
// the segment is checked batch by batch from its last verifiable index entry at
// or below the recovery point (or from its start), its index entries after that
// point are rebuilt, and the file is cut at the first invalid byte. checked
// reports whether the segment was scanned.
func (l *Log) recoverSegment(base int64, m SegmentMeta, rp int64) (s *segment, checked bool, err error) {
	path := segmentPath(l.dir, base)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, false, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, err
	}
	s = &segment{base: base, file: newSegFile(f, path), next: base, maxTs: -1, firstTs: -1}
	fileSize := fi.Size()
	defer func() {
		if err != nil {
			_ = s.file.unref()
			s = nil
		}
	}()

	if m.BaseOffset == base && m.Size == fileSize && (m.Closed || m.NextOffset <= rp) &&
		m.NextOffset >= base && (m.Size == 0) == (m.NextOffset == base) {
		if m.Size == 0 {
			s.closed = m.Closed
			return s, false, nil
		}
		if h, err := readHeaderAt(f, 0, fileSize); err == nil && h.BaseOffset == base {
			s.size, s.next, s.maxTs, s.closed = m.Size, m.NextOffset, m.MaxTimestamp, m.Closed
			s.firstTs = h.MaxTimestamp
			return s, false, nil
		}
		// The recorded metadata does not describe this file: check it.
	}

	// Where to start checking: the last index entry at or below the recovery point,
	// if the batch it points at is really there.
	start := IndexEntry{Offset: base, Pos: 0, MaxTimestampBefore: -1}
	if e, ok, err := l.idx.LookupOffset(base, rp); err != nil {
		return nil, false, fmt.Errorf("read index of segment %d: %w", base, err)
	} else if ok && e.Pos > 0 && e.Offset > base {
		if h, _, err := readBatch(f, e.Pos, fileSize, nil); err == nil && h.BaseOffset == e.Offset {
			start = e
		}
	}
	if err := l.idx.TruncateEntries(base, start.Offset+1); err != nil {
		return nil, false, fmt.Errorf("truncate index of segment %d: %w", base, err)
	}

	pos, next, maxTs := start.Pos, start.Offset, start.MaxTimestampBefore
	var bytesSince int64
	var buf []byte
	var damage error
	for pos < fileSize {
		var h batch.Header
		h, buf, err = readBatch(f, pos, fileSize, buf)
		if err == nil && h.BaseOffset != next {
			err = fmt.Errorf("base offset %d, expected %d", h.BaseOffset, next)
		}
		if err != nil {
			damage = err
			break
		}
		if pos > 0 && bytesSince >= l.cfg.IndexIntervalBytes {
			if err := l.idx.PutEntry(base, IndexEntry{Offset: h.BaseOffset, Pos: pos, MaxTimestampBefore: maxTs}); err != nil {
				return nil, false, fmt.Errorf("rebuild index of segment %d: %w", base, err)
			}
			bytesSince = 0
		}
		bytesSince += h.Size()
		pos += h.Size()
		next = h.NextOffset()
		maxTs = max(maxTs, h.MaxTimestamp)
	}
	if damage != nil {
		l.log.Warn("truncating damaged segment", "file", path, "position", pos, "bytes_dropped", fileSize-pos, "err", damage)
		if err := f.Truncate(pos); err != nil {
			return nil, false, fmt.Errorf("truncate %s: %w", path, err)
		}
	}
	s.size, s.next, s.maxTs = pos, next, maxTs
	if pos > 0 {
		h, err := readHeaderAt(f, 0, pos)
		if err != nil {
			return nil, false, &CorruptionError{File: path, Pos: 0, Err: err}
		}
		s.firstTs = h.MaxTimestamp
	}
	return s, true, nil
}
