package logstore

import (
	"fmt"
	"time"
)

// ApplyRetention deletes whole segments from the oldest on while each one is
// wholly below the log start offset (AdvanceLogStart), or expired (its largest
// batch maxTimestamp is older than now-Config.RetentionMs), or not needed to keep
// Config.RetentionBytes (the log without it would still hold at least
// RetentionBytes: Kafka's rule), and moves the log start offset to the first
// remaining segment (unless it is already past it). If the active segment
// qualifies too (all data expired), the log first rolls to a new empty segment at
// the log end and then deletes the old one, so the log start offset reaches the
// log end, as Kafka does. An empty active segment is never deleted.
//
// Each segment is removed from the index, with the new log start offset
// recorded, before its file is removed. Readers holding a Slice keep the file
// until they release it. It returns how many segments were deleted.
func (l *Log) ApplyRetention(now time.Time) (deletedSegments int, err error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return 0, err
	}
	segs := l.mu.segs
	total := l.size.Load()
	cutoff := now.UnixMilli() - l.cfg.RetentionMs
	n := 0
	for _, s := range segs {
		if s.size == 0 {
			break
		}
		ts := s.maxTs
		if ts < 0 { // no batch timestamps: use the file's modification time
			if fi, err := l.fs.Stat(s.file.path); err == nil {
				ts = fi.ModTime().UnixMilli()
			}
		}
		below := s.next <= l.logStart.Load()
		expired := l.cfg.RetentionMs >= 0 && ts < cutoff
		oversize := l.cfg.RetentionBytes >= 0 && total-s.size >= l.cfg.RetentionBytes
		if !below && !expired && !oversize {
			break
		}
		total -= s.size
		n++
	}
	if n == 0 {
		return 0, nil
	}
	if n == len(segs) {
		if err := l.rollLocked(l.active().next); err != nil {
			return 0, err
		}
	}
	for _, s := range segs[:n] {
		if err := l.deleteOldestLocked(s); err != nil {
			return deletedSegments, err
		}
		deletedSegments++
	}
	if err := l.syncDir(); err != nil {
		return deletedSegments, l.latchLocked(err)
	}
	return deletedSegments, nil
}

// deleteOldestLocked deletes s, the oldest segment: index first, then the file.
func (l *Log) deleteOldestLocked(s *segment) error {
	newStart := max(l.logStart.Load(), s.next)
	if err := l.idx.SetLogStartOffset(newStart, false); err != nil {
		return fmt.Errorf("logstore: retention: %w", err)
	}
	if err := l.idx.DeleteSegment(s.base); err != nil {
		return fmt.Errorf("logstore: retention: %w", err)
	}
	l.mu.Lock()
	l.mu.segs = l.mu.segs[1:]
	l.listGen.Add(1)
	l.logStart.Store(newStart)
	l.publishLocked()
	l.mu.Unlock()
	l.log.Info("deleted segment by retention", "file", s.file.path, "log_start_offset", newStart)
	_ = s.file.retire() // before the name goes; readers holding it keep it until they let go
	if err := l.fs.Remove(s.file.path); err != nil {
		return fmt.Errorf("logstore: retention: %w", err)
	}
	return nil
}

// AdvanceLogStart moves the log start offset up to offset, as Kafka's
// DeleteRecords does: from then on reads below it are ErrOffsetOutOfRange and
// ListOffsets' earliest is offset, and the next ApplyRetention deletes the
// segments wholly below it. The new start is recorded durably in the index
// before it takes effect, so it survives a crash (docs/format/segment.md). An
// offset at or below the current start changes nothing; one above the log end is
// ErrOffsetOutOfRange. It reports whether the start moved.
func (l *Log) AdvanceLogStart(offset int64) (bool, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return false, err
	}
	start, end := l.logStart.Load(), l.active().next
	switch {
	case offset <= start:
		return false, nil
	case offset > end:
		return false, fmt.Errorf("%w: new log start %d is past the log end %d", ErrOffsetOutOfRange, offset, end)
	}
	if err := l.idx.SetLogStartOffset(offset, true); err != nil {
		return false, fmt.Errorf("logstore: advance the log start offset: %w", err)
	}
	l.mu.Lock()
	l.logStart.Store(offset)
	l.mu.Unlock()
	l.log.Info("log start offset moved", "log_start_offset", offset)
	return true, nil
}
