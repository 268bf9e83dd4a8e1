package logstore

import (
	"bytes"

	"skiff/internal/batch"
)

// Crash abandons l as a killed process would: file descriptors are closed, but
// nothing is synced and nothing more is written to the index. Written bytes stay
// in the page cache, as after a process crash.
func (l *Log) Crash() {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.closing = true
	l.mu.Lock()
	segs := l.mu.segs
	l.mu.segs = nil
	l.mu.closed = true
	l.mu.Unlock()
	for _, s := range segs {
		_ = s.file.retire()
	}
}

// BreakActiveFile closes the active segment's descriptor underneath the log so
// that the next write or fsync fails.
func (l *Log) BreakActiveFile() {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	_ = l.active().file.writable().Close()
}

// Users returns, for each of the log's segments, how many users hold its file
// open besides the log's own pin.
func (l *Log) Users() []int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var us []int
	for _, s := range l.mu.segs {
		s.file.mu.Lock()
		n := s.file.users
		if s.file.pinned {
			n--
		}
		s.file.mu.Unlock()
		us = append(us, n)
	}
	return us
}

// Peak returns the most segment files the cache's logs had open at once.
func (c *FileCache) Peak() int64 { return c.peak.Load() }

// ScanBatches is ScanSegmentSkipping over data, a segment of base offset 0
// (for FuzzScanSegmentSkipping).
func ScanBatches(data []byte, skip func(h *batch.Header) bool, fn func(h batch.Header, b []byte) error) error {
	return scanBatches(bytes.NewReader(data), "segment", int64(len(data)), 0, skip, fn)
}
