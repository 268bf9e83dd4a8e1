package compaction

import (
	"time"

	"skiff/logstore"
)

// span is what of one log a pass may compact, decided from its segments alone
// (Kafka's LogCleanerManager.cleanableOffsets): the sealed segments from the
// one holding the log start on, up to the first that is not sealed, reaches the
// high watermark, or (from the first dirty offset on) holds a record younger
// than the minimum lag. Segments up to the cleaner point are clean, the later
// ones dirty.
type span struct {
	segs       []logstore.SegmentInfo // compactable, oldest first
	dirty      int                    // segs[dirty:] hold offsets at or above firstDirty
	firstDirty int64
	cleanBytes int64
	dirtyBytes int64
	// overdue: a dirty segment's first batch is older than the maximum lag.
	overdue bool
}

// ratio is the dirty share of the compactable bytes.
func (s *span) ratio() float64 {
	if s.cleanBytes+s.dirtyBytes == 0 {
		return 0
	}
	return float64(s.dirtyBytes) / float64(s.cleanBytes+s.dirtyBytes)
}

// due reports whether the log should be compacted now: its ratio reaches the
// minimum, or it is overdue, or a tombstone's delete horizon (the earliest,
// horizon; -1: none known) has passed.
func (s *span) due(cfg Config, horizon int64, now time.Time) bool {
	if len(s.segs) == 0 {
		return false
	}
	if s.dirtyBytes > 0 && (s.overdue || s.ratio() >= cfg.MinCleanableRatio) {
		return true
	}
	return horizon >= 0 && horizon <= now.UnixMilli()
}

// planSpan finds the compactable span of a log with segments segs, log start
// offset start, cleaner point cleanerPoint and high watermark hw.
func planSpan(segs []logstore.SegmentInfo, start, cleanerPoint, hw int64, cfg Config, now time.Time) span {
	sp := span{firstDirty: max(cleanerPoint, start)}
	nowMs := now.UnixMilli()
	for _, s := range segs {
		if s.Next <= start {
			continue // below the log start: retention removes it
		}
		if !s.Sealed || s.Next > hw {
			break
		}
		dirty := s.Next > sp.firstDirty
		if dirty && cfg.MinLag > 0 && s.MaxTimestamp > nowMs-cfg.MinLag.Milliseconds() {
			break // records too young to compact, and everything after them
		}
		sp.segs = append(sp.segs, s)
		if !dirty {
			sp.cleanBytes += s.Size
			sp.dirty = len(sp.segs)
			continue
		}
		sp.dirtyBytes += s.Size
		if cfg.MaxLag > 0 && s.FirstTimestamp >= 0 && s.FirstTimestamp < nowMs-cfg.MaxLag.Milliseconds() {
			sp.overdue = true
		}
	}
	return sp
}

// groups splits segs into runs of consecutive segments whose sizes add up to at
// most maxBytes (at least one segment each): each run becomes one segment
// (Kafka's groupSegmentsBySize), so a compacted log does not keep many small
// files.
func groups(segs []logstore.SegmentInfo, maxBytes int64) [][]logstore.SegmentInfo {
	var out [][]logstore.SegmentInfo
	for len(segs) > 0 {
		n, size := 1, segs[0].Size
		for n < len(segs) && size+segs[n].Size <= maxBytes {
			size += segs[n].Size
			n++
		}
		out = append(out, segs[:n])
		segs = segs[n:]
	}
	return out
}
