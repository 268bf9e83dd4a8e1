package logstore

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
		_ = s.file.unref()
	}
}

// BreakActiveFile closes the active segment's descriptor underneath the log so
// that the next write or fsync fails.
func (l *Log) BreakActiveFile() {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	_ = l.active().file.f.Close()
}

// OpenFiles returns the reference counts of the log's segment files.
func (l *Log) RefCounts() []int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var rs []int32
	for _, s := range l.mu.segs {
		rs = append(rs, s.file.refs.Load())
	}
	return rs
}
