package logstore

import (
	"fmt"

	"skiff/internal/batch"
)

// Append stores b, exactly one batch that the caller has already validated
// (batch.Check), at the log end. It assigns the batch its offsets by rewriting
// baseOffset (to the log end offset) and partitionLeaderEpoch in b itself, writes
// it with one write call and returns its base offset. The active segment is
// rolled first when the batch would push it past Config.SegmentBytes or when the
// batch is more than Config.SegmentMs younger than the segment's first batch.
//
// The batch is in the page cache when Append returns, not on disk: call Sync for
// that. After a failed write or fsync every later Append returns that error.
func (l *Log) Append(b []byte, leaderEpoch int32) (baseOffset int64, err error) {
	h, err := batch.ParseHeader(b)
	if err == nil && h.Size() != int64(len(b)) {
		err = fmt.Errorf("%w: batchLength %d, %d bytes", batch.ErrLength, h.BatchLength, len(b)-batch.LogOverhead)
	}
	if err != nil {
		return -1, fmt.Errorf("logstore: append: %w", err)
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return -1, err
	}
	base := l.active().next
	batch.SetBaseOffset(b, base)
	batch.SetLeaderEpoch(b, leaderEpoch)
	h.BaseOffset, h.LeaderEpoch = base, leaderEpoch
	if err := l.writeLocked(b, []batch.Header{h}); err != nil {
		return -1, err
	}
	return base, nil
}

// AppendReplica stores b, one or more whole batches whose offsets were assigned
// by the leader, as they are (a follower's append). Every batch is checked
// (batch.Check); the first base offset must be the log end offset and each
// following batch must start at the next offset of the one before
// (ErrNotContiguous otherwise). Nothing is written if any check fails.
func (l *Log) AppendReplica(b []byte) error {
	var hs []batch.Header
	if err := batch.Split(b, func(h batch.Header, _ []byte) error {
		if n := len(hs); n > 0 && h.BaseOffset != hs[n-1].NextOffset() {
			return fmt.Errorf("%w: base offset %d after next offset %d", ErrNotContiguous, h.BaseOffset, hs[n-1].NextOffset())
		}
		hs = append(hs, h)
		return nil
	}); err != nil {
		return fmt.Errorf("logstore: append replica: %w", err)
	}
	if len(hs) == 0 {
		return nil
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if end := l.active().next; hs[0].BaseOffset != end {
		return fmt.Errorf("logstore: append replica: %w: base offset %d, log end offset %d", ErrNotContiguous, hs[0].BaseOffset, end)
	}
	return l.writeLocked(b, hs)
}

// shouldRoll reports whether a batch h must go into a new segment when the
// active segment holds size bytes and its first batch has maxTimestamp firstTs.
func (l *Log) shouldRoll(size, firstTs int64, h *batch.Header) bool {
	if size == 0 {
		return false // an empty segment takes any batch, even one over SegmentBytes
	}
	return size+h.Size() > l.cfg.SegmentBytes || h.MaxTimestamp-firstTs > l.cfg.SegmentMs
}

// writeLocked appends data, the whole batches described by hs back to back, to
// the log end, rolling segments as needed; each run of batches that fits in one
// segment is written with one write call. The caller holds appendMu.
func (l *Log) writeLocked(data []byte, hs []batch.Header) error {
	for len(hs) > 0 {
		act := l.active()
		if l.shouldRoll(act.size, act.firstTs, &hs[0]) {
			if err := l.rollLocked(hs[0].BaseOffset); err != nil {
				return err
			}
			act = l.active()
		}
		// The run of batches that fit into the active segment, and its index entries.
		var (
			runBytes   int64
			n          int
			maxTs      = act.maxTs
			firstTs    = act.firstTs
			bytesSince = l.bytesSinceIndex
			entries    []IndexEntry
		)
		for n < len(hs) {
			h := &hs[n]
			if n > 0 && l.shouldRoll(act.size+runBytes, firstTs, h) {
				break
			}
			if pos := act.size + runBytes; pos > 0 && bytesSince >= l.cfg.IndexIntervalBytes {
				entries = append(entries, IndexEntry{Offset: h.BaseOffset, Pos: pos, MaxTimestampBefore: maxTs})
				bytesSince = 0
			}
			if act.size+runBytes == 0 {
				firstTs = h.MaxTimestamp
			}
			bytesSince += h.Size()
			runBytes += h.Size()
			maxTs = max(maxTs, h.MaxTimestamp)
			n++
		}
		// Index entries go first: an entry for a batch not yet written points at
		// the log end, where the next batch will start whatever happens, and is
		// never returned for an offset below the log end.
		for _, e := range entries {
			if err := l.idx.PutEntry(act.base, e); err != nil {
				return fmt.Errorf("logstore: index segment %d: %w", act.base, err)
			}
		}
		run := data[:runBytes]
		if w, err := act.file.f.WriteAt(run, act.size); err != nil {
			return l.latchLocked(fmt.Errorf("logstore: write %s at %d (%d of %d bytes written): %w", act.file.path, act.size, w, len(run), err))
		}
		next := hs[n-1].NextOffset()

		l.mu.Lock()
		act.size += runBytes
		act.next = next
		act.maxTs = maxTs
		act.firstTs = firstTs
		l.mu.ring = append(l.mu.ring, entries...)
		if k := len(l.mu.ring) - ringSize; k > 0 {
			l.mu.ring = append(l.mu.ring[:0], l.mu.ring[k:]...)
		}
		l.publishLocked()
		l.mu.Unlock()

		l.bytesSinceIndex = bytesSince
		data, hs = data[runBytes:], hs[n:]
	}
	return nil
}

// rollLocked fsyncs and closes the active segment and starts a new one at base.
// The caller holds appendMu.
func (l *Log) rollLocked(base int64) error {
	old := l.active()
	if err := fdatasync(old.file.f); err != nil {
		return l.latchLocked(fmt.Errorf("logstore: sync %s: %w", old.file.path, err))
	}
	m := old.meta()
	m.Closed = true
	if err := l.idx.PutSegment(m); err != nil {
		return fmt.Errorf("logstore: roll: %w", err)
	}
	s, err := l.createSegment(base)
	if err != nil {
		return l.latchLocked(fmt.Errorf("logstore: roll: %w", err))
	}
	l.mu.Lock()
	old.closed = true
	l.mu.segs = append(l.mu.segs, s)
	l.mu.ring = l.mu.ring[:0]
	l.publishLocked()
	l.mu.Unlock()
	l.bytesSinceIndex = 0
	// Everything before the new segment is on disk now.
	return l.setRecoveryPointLocked(base, false)
}

// Sync fdatasyncs the active segment and then records the log end offset as of
// the call as the recovery point (rolled segments were synced when they were
// rolled). It does not block appends while the fsync runs, so one Sync covers
// every batch appended before it started (group commit). A failed fsync is
// latched: every later Append and Sync returns it.
func (l *Log) Sync() error {
	l.appendMu.Lock()
	if err := l.writableLocked(); err != nil {
		l.appendMu.Unlock()
		return err
	}
	act := l.active()
	end := act.next
	gen := l.gen.Load()
	act.file.ref()
	l.appendMu.Unlock()

	err := fdatasync(act.file.f)
	_ = act.file.unref() // the Log still holds a reference unless it was closed meanwhile

	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err != nil {
		return l.latchLocked(fmt.Errorf("logstore: sync %s: %w", act.file.path, err))
	}
	if l.err != nil {
		return l.err
	}
	truncated := l.gen.Load() != gen
	if l.closing || truncated || end <= l.recoveryPoint {
		return nil // Close recorded its own point; a Truncate may have replaced synced data
	}
	return l.setRecoveryPointLocked(end, false)
}
