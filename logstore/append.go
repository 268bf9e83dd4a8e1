package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/cockroachdb/pebble/v2/vfs"

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
// that. A failed write (a full disk: ENOSPC, or EIO) is cut off again and
// returned; the log stays as it was and later appends may succeed. After a failed
// fsync (or a failed write that could not be cut off) every later Append returns
// that error (see Failed).
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
// (batch.Check); the first base offset must be at least the log end offset and
// each following batch must start at or after the next offset of the one before
// (ErrNotContiguous otherwise): the leader's log may have gaps that compaction
// left, and the replica keeps them. Nothing is written if any check fails.
func (l *Log) AppendReplica(b []byte) error {
	var hs []batch.Header
	if err := batch.Split(b, func(h batch.Header, _ []byte) error {
		hs = append(hs, h)
		return nil
	}); err != nil {
		return fmt.Errorf("logstore: append replica: %w", err)
	}
	return l.AppendReplicaChecked(b, hs)
}

// AppendReplicaChecked is AppendReplica for a caller that has already split and
// checked b: hs must be the headers batch.Split gave for all of b, in order. A
// follower checks each batch once (a CRC pass over the bytes) instead of twice.
func (l *Log) AppendReplicaChecked(b []byte, hs []batch.Header) error {
	for i := 1; i < len(hs); i++ {
		if hs[i].BaseOffset < hs[i-1].NextOffset() {
			return fmt.Errorf("logstore: append replica: %w: base offset %d after next offset %d", ErrNotContiguous, hs[i].BaseOffset, hs[i-1].NextOffset())
		}
	}
	if len(hs) == 0 {
		return nil
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if end := l.active().next; hs[0].BaseOffset < end {
		return fmt.Errorf("logstore: append replica: %w: base offset %d, log end offset %d", ErrNotContiguous, hs[0].BaseOffset, end)
	}
	return l.writeLocked(b, hs)
}

// shouldRoll reports whether a batch h must go into a new segment when the
// active segment (base offset base) holds size bytes and its first batch has
// maxTimestamp firstTs. The caller holds appendMu.
func (l *Log) shouldRoll(base, size, firstTs int64, h *batch.Header) bool {
	if size == 0 {
		return false // an empty segment takes any batch, even one over SegmentBytes
	}
	return size+h.Size() > l.cfg.SegmentBytes || h.MaxTimestamp-firstTs > l.cfg.SegmentMs-l.rollJitter(base)
}

// rollJitter is how much earlier than SegmentMs the segment at base rolls by
// age: below min(SegmentJitterMs, SegmentMs), fixed per segment and spread
// across partitions by a hash of the log's directory and the base offset (Kafka
// draws it at random when the segment is created). The caller holds appendMu.
func (l *Log) rollJitter(base int64) int64 {
	limit := min(l.cfg.SegmentJitterMs, l.cfg.SegmentMs)
	if limit <= 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(l.dir))
	_ = binary.Write(h, binary.BigEndian, base)
	return int64(h.Sum64() % uint64(limit))
}

// writeLocked appends data, the whole batches described by hs back to back, to
// the log end, rolling segments as needed; each run of batches that fits in one
// segment is written with one write call. The caller holds appendMu.
func (l *Log) writeLocked(data []byte, hs []batch.Header) error {
	for len(hs) > 0 {
		act := l.active()
		if l.shouldRoll(act.base, act.size, act.firstTs, &hs[0]) {
			// The new segment starts at the log end, before a gap if the batch
			// follows one: segment files tile the offsets (segment.md).
			if err := l.rollLocked(act.next); err != nil {
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
			if n > 0 && l.shouldRoll(act.base, act.size+runBytes, firstTs, h) {
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
		if w, err := act.file.writable().WriteAt(run, act.size); err != nil {
			return l.undoWriteLocked(act, fmt.Errorf("logstore: write %s at %d (%d of %d bytes written): %w", act.file.path, act.size, w, len(run), err))
		}
		l.written.Add(runBytes)
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

// undoWriteLocked handles a failed write to the active segment act: the file is
// cut back to the segment's size, so that no part of the batch stays in the file
// (the log's state in memory did not change). The write error is returned, not
// latched: a full disk may have room again later. If the cut fails, the file's
// contents are unknown and the error is latched. The caller holds appendMu.
func (l *Log) undoWriteLocked(act *segment, werr error) error {
	if err := truncateFile(act.file.writable(), act.size); err != nil {
		return l.latchLocked(errors.Join(werr, fmt.Errorf("logstore: cut %s back to %d bytes: %w", act.file.path, act.size, err)))
	}
	return werr
}

// rollLocked closes the active segment and starts a new one at base. It does not
// fsync (it runs under the append lock): the old segment and the new directory
// entry are synced by the next Sync (or Close), which records the old segment as
// closed in the index and lets its file go to the cache (unpins it) only then. The caller holds appendMu. A new segment that
// cannot be created (a full disk) leaves the old one active and the log as it was.
func (l *Log) rollLocked(base int64) error {
	old := l.active()
	s, err := l.createSegment(base, false)
	if err != nil {
		return l.failLocked(fmt.Errorf("logstore: roll: %w", err))
	}
	l.mu.Lock()
	old.closed, old.unsynced = true, true
	l.mu.segs = append(l.mu.segs, s)
	l.mu.ring = l.mu.ring[:0]
	l.publishLocked()
	l.mu.Unlock()
	l.bytesSinceIndex = 0
	l.rolledUnsynced.Store(true)
	if err := l.idx.PutSegment(old.meta()); err != nil { // its final size, not yet closed
		l.log.Warn("recording a rolled segment in the index", "file", old.file.path, "err", err) // derived data: recovery checks the segment
	}
	return nil
}

// syncTarget is what one Sync fdatasyncs, taken under appendMu: the rolled segments
// not yet synced, the directory if segment files were created in it, and the
// active segment, each file acquired (all are pinned, so this opens nothing).
type syncTarget struct {
	rolled     []*segment
	active     *segment
	files      []vfs.File // of rolled, then of active
	dirChanges int64      // the directory needs a sync if this exceeds dirSynced
	end        int64      // log end offset
	written    int64      // bytes written
	gen        uint64
}

func (l *Log) syncTargetLocked() (syncTarget, error) {
	t := syncTarget{active: l.active(), dirChanges: l.dirChanges, written: l.written.Load(), gen: l.gen.Load()}
	t.end = t.active.next
	for _, s := range l.mu.segs {
		if s.unsynced {
			t.rolled = append(t.rolled, s)
		}
	}
	for _, s := range append(t.rolled[:len(t.rolled):len(t.rolled)], t.active) {
		f, err := s.file.acquire()
		if err != nil {
			t.release()
			return syncTarget{}, fmt.Errorf("logstore: sync %s: %w", s.file.path, err)
		}
		t.files = append(t.files, f)
	}
	return t, nil
}

// release lets go of the files t acquired.
func (t *syncTarget) release() {
	for i := range t.files {
		if i < len(t.rolled) {
			_ = t.rolled[i].file.release()
		} else {
			_ = t.active.file.release()
		}
	}
	t.files = nil
}

// sync fdatasyncs t's files, rolled segments first, then the directory, then the
// active segment, and releases them. Called without locks.
func (l *Log) sync(t syncTarget, dirSynced int64) error {
	defer t.release()
	var err error
	for i, s := range t.rolled {
		if err = syncFile(t.files[i], s.file.path); err != nil {
			return err
		}
	}
	if t.dirChanges > dirSynced {
		if err = l.syncDir(); err != nil {
			return err
		}
	}
	return syncFile(t.files[len(t.files)-1], t.active.file.path)
}

// syncedLocked records that t was synced: its rolled segments become closed in the
// index. The caller holds appendMu; a Truncate since t was taken (the generation
// moved) voids it.
func (l *Log) syncedLocked(t syncTarget) {
	if l.gen.Load() != t.gen {
		return
	}
	l.dirSynced = max(l.dirSynced, t.dirChanges)
	// The flags change under mu too: Segments and the cleaner read them holding
	// only mu.
	var sealed []SegmentMeta
	var files []*segFile
	l.mu.Lock()
	for _, s := range t.rolled {
		if !s.unsynced {
			continue // a Sync that ran meanwhile recorded it
		}
		s.unsynced = false
		sealed, files = append(sealed, s.meta()), append(files, s.file)
	}
	pending := false
	for _, s := range l.mu.segs {
		pending = pending || s.unsynced
	}
	l.mu.Unlock()
	l.rolledUnsynced.Store(pending)
	for i, m := range sealed {
		if err := l.idx.PutSegment(m); err != nil {
			l.log.Warn("recording a rolled segment in the index", "file", files[i].path, "err", err)
		}
		_ = files[i].unpin() // sealed: opened again when read, if the cache closes it
	}
}

// syncAllLocked fdatasyncs everything unsynced while holding appendMu (Close).
func (l *Log) syncAllLocked() error {
	t, err := l.syncTargetLocked()
	if err != nil {
		return err
	}
	if err := l.sync(t, l.dirSynced); err != nil {
		return err
	}
	l.syncedLocked(t)
	return nil
}

// Sync fdatasyncs everything appended so far (rolled segments not yet synced, the
// directory, the active segment) and then records the log end offset as of the
// call as the recovery point (SyncedOffset). It does not block appends while the
// fsyncs run, so one Sync covers every batch appended before it started (group
// commit). A failed fsync is latched: every later Append and Sync returns it, and
// it is never retried as if it could succeed (the kernel may have dropped the
// pages it failed to write).
func (l *Log) Sync() error {
	l.appendMu.Lock()
	if err := l.writableLocked(); err != nil {
		l.appendMu.Unlock()
		return err
	}
	t, err := l.syncTargetLocked()
	if err != nil {
		l.appendMu.Unlock()
		return err
	}
	dirSynced := l.dirSynced
	l.appendMu.Unlock()

	err = l.sync(t, dirSynced)

	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err != nil {
		return l.latchLocked(err)
	}
	if l.err != nil {
		return l.err
	}
	if l.closing || l.gen.Load() != t.gen {
		return nil // Close recorded its own point; a Truncate may have replaced synced data
	}
	l.syncedLocked(t)
	l.markSyncedLocked(t.written)
	if t.end <= l.recoveryPoint {
		return nil
	}
	return l.setRecoveryPointLocked(t.end, false)
}
