package logstore

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// recover builds the in-memory state of a log from its directory and index: it
// reads what it needs (readSegments), decides (planRecovery) and acts
// (applyRecovery). It runs inside Open, before the Log is shared. See
// docs/format/segment.md, "Recovery".
func (l *Log) recover() error {
	st, err := l.readSegments()
	if err != nil {
		return err
	}
	l.mu.segs = st.opened // Open retires them if recovery fails
	p := planRecovery(st.in)
	err = l.applyRecovery(p, st)
	for _, sf := range st.held {
		_ = sf.release() // renamed to their segment files by now, or the log is not opened
	}
	if err != nil {
		return err
	}
	if err := l.recordRecovered(p, st.metas, st.in.recoveryPoint); err != nil {
		return err
	}
	return l.active().file.pin()
}

// applyRecovery carries out the file changes of plan p, made from st, in the
// order recoveryPlan lists, and drops the index metadata of files that do not
// exist. l.mu.segs is then the kept segments.
func (l *Log) applyRecovery(p recoveryPlan, st diskState) error {
	if p.resetIndex {
		if err := l.idx.Delete(); err != nil {
			return fmt.Errorf("reset index: %w", err)
		}
	}
	for base := range st.metas {
		if !slices.ContainsFunc(st.in.files, func(f segmentState) bool { return f.base == base }) {
			if err := l.idx.DeleteSegment(base); err != nil {
				return fmt.Errorf("drop index of missing segment %d: %w", base, err)
			}
		}
	}
	for _, base := range p.cleaned {
		l.log.Info("removing the output of an interrupted compaction", "file", l.cleanedPath(base))
		if err := l.fs.Remove(l.cleanedPath(base)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := l.finishSwaps(p); err != nil {
		return err
	}
	for _, base := range p.expired {
		l.log.Info("removing segment below the log start offset", "file", segmentName(base), "log_start_offset", st.in.logStart)
		if err := l.removeSegment(base); err != nil {
			return err
		}
	}
	if p.err != nil {
		return p.err
	}

	if len(p.unfollow) > 0 {
		last := l.active() // the last file read, which the removed ones no longer follow
		for _, base := range p.unfollow {
			if p.lostTail {
				l.log.Warn("removing segment that no longer follows the log (the unsynced end of the segment before was lost)",
					"file", segmentName(base), "expected_base_offset", last.next)
			} else {
				l.log.Warn("removing segment that follows a damaged one", "file", segmentName(base), "expected_base_offset", last.next)
			}
			if err := l.removeSegment(base); err != nil {
				return err
			}
		}
		if err := l.syncDir(); err != nil {
			return err
		}
	}
	if c := p.cut; c != nil {
		s := l.mu.segs[l.openedIndex(c.base)]
		l.log.Warn("truncating damaged segment", "file", s.file.path, "position", c.pos, "bytes_dropped", c.fileSize-c.pos, "err", c.damage)
		err := s.file.pin() // open for writing
		if err == nil {
			err = truncateFile(s.file.writable(), c.pos)
			_ = s.file.unpin()
		}
		if err != nil {
			return fmt.Errorf("truncate %s: %w", s.file.path, err)
		}
	}
	for _, base := range p.stale {
		l.log.Warn("removing segment below the log start offset", "file", segmentName(base), "log_start_offset", st.in.logStart)
		i := l.openedIndex(base)
		s := l.mu.segs[i]
		l.mu.segs = slices.Delete(l.mu.segs, i, i+1)
		_ = s.file.retire()
		if err := l.removeSegment(base); err != nil {
			return err
		}
	}
	if p.create {
		s, err := l.createSegment(p.logStart, true)
		if err != nil {
			return err
		}
		l.mu.segs = append(l.mu.segs, s)
	}
	return nil
}

// finishSwaps finishes the rewrites that were interrupted after their commit
// point, as Rewrite.Commit would have: the files each swap replaces go (the last
// one first), then the swaps take the names of the first files they replace.
func (l *Log) finishSwaps(p recoveryPlan) error {
	if len(p.swaps) == 0 {
		return nil
	}
	for _, base := range p.replaced {
		l.log.Info("finishing an interrupted compaction: removing a replaced segment", "file", segmentName(base))
		if err := l.removeSegment(base); err != nil {
			return err
		}
	}
	if err := l.syncDir(); err != nil {
		return err
	}
	for _, base := range p.swaps {
		l.log.Info("finishing an interrupted compaction: swapping in the compacted segment", "file", segmentName(base))
		if err := l.fs.Rename(l.swapPath(base), l.segmentPath(base)); err != nil {
			return fmt.Errorf("finish compaction of segment %d: %w", base, err)
		}
	}
	return l.syncDir()
}

// recordRecovered makes the kept segments durable where recovery checked them
// and records them, the log start offset and the recovery point in the index
// (metas is what it held before), then publishes the log's bounds.
func (l *Log) recordRecovered(p recoveryPlan, metas map[int64]SegmentMeta, recorded int64) error {
	if p.create {
		metas = map[int64]SegmentMeta{p.logStart: l.active().meta()} // recorded by createSegment
	}
	// Every segment but the last is closed; make sure what recovery checked is on
	// disk before recording it as such.
	last := len(l.mu.segs) - 1
	for i, s := range l.mu.segs {
		if slices.Contains(p.sync, s.base) {
			if err := syncSegment(s.file); err != nil {
				return err
			}
		}
		s.closed = i < last
		if m, ok := metas[s.base]; !ok || m != s.meta() {
			if err := l.idx.PutSegment(s.meta()); err != nil {
				return fmt.Errorf("record segment %d: %w", s.base, err)
			}
		}
	}
	if p.removes() || len(p.sync) > 0 || recorded < l.active().next {
		// Removals above, or segments recorded as synced for the first time (the
		// directory entry of one rolled before a crash may not be). Otherwise the
		// run that recorded the recovery point synced the directory first, and
		// one fsync per partition at every start was most of opening 10,000.
		if err := l.syncDir(); err != nil {
			return err
		}
	}
	if err := l.idx.SetLogStartOffset(p.logStart, false); err != nil {
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
	l.logStart.Store(p.logStart)
	l.publishLocked()
	return l.recoverCleanerPoint(p.logStart, act.next)
}

// recoverCleanerPoint loads the cleaner point; one past the log end (the log lost
// its tail) starts the cleaner over at the log start, as Kafka does.
func (l *Log) recoverCleanerPoint(start, end int64) error {
	cp, err := l.idx.CleanerPoint()
	if err != nil {
		return fmt.Errorf("read cleaner point: %w", err)
	}
	if cp > end {
		cp = start
		if err := l.idx.SetCleanerPoint(cp); err != nil {
			return fmt.Errorf("record cleaner point: %w", err)
		}
	}
	l.cleanerPoint.Store(cp)
	return nil
}

// openedIndex returns the position in l.mu.segs of the segment of base. The plan
// cuts, and removes as stale, only files that recovery read, so they are open.
func (l *Log) openedIndex(base int64) int {
	return slices.IndexFunc(l.mu.segs, func(s *segment) bool { return s.base == base })
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

// createSegment creates (or empties) the segment file for base, pinned open,
// and records it in the index. With syncDir its directory entry is made durable at once; otherwise
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
	sf := newOpenSegFile(l.cfg.Files, l.fs, f, path)
	sf.pinned = true // the new active segment: its one user is the pin
	s := &segment{base: base, file: sf, next: base, maxTs: -1, firstTs: -1}
	if err := l.idx.PutSegment(s.meta()); err != nil {
		l.log.Warn("recording a new segment in the index", "file", path, "err", err) // derived data: recovery finds the file
	}
	return s, nil
}

// syncSegment fdatasyncs the segment file sf, opening it if the cache closed it.
func syncSegment(sf *segFile) error {
	f, err := sf.acquire()
	if err != nil {
		return fmt.Errorf("open %s: %w", sf.path, err)
	}
	defer sf.release()
	return syncFile(f, sf.path)
}
