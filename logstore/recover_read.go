package logstore

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"

	"skiff/internal/batch"
)

// diskState is what recovery read before deciding anything.
type diskState struct {
	in     recoveryInput
	metas  map[int64]SegmentMeta // the index's segment metadata by base offset
	opened []*segment            // the files read, in order (left to the file cache)
	// held are the files of the swaps read, kept open (acquired) until they are
	// renamed to the segment file names their segFiles already carry.
	held []*segFile
}

// readSegments lists the segment files, reads the index's view of them, and
// reads the files planRecovery needs: first the .swap files of a rewrite that
// was interrupted after its commit point (each stands for the segment files it
// covers: finishSwaps), then, from the first file not expired, each trusted from
// its metadata or else checked batch by batch (rebuilding its index entries), up
// to the first one that does not end where the next one begins. The later files
// are either removed or the cause of an error, so they are not opened. Each
// segment file is left to the file cache once read, so recovery does not hold
// every segment open at once. A directory with no segment file is a new log: the
// index is not read. On error nothing is left open.
func (l *Log) readSegments() (st diskState, err error) {
	ls, err := l.listSegments()
	if err != nil {
		return st, err
	}
	st.in.cleaned = ls.cleaned
	if len(ls.bases) == 0 && len(ls.swaps) == 0 {
		return st, nil
	}
	defer func() {
		if err != nil {
			for _, sf := range st.held {
				_ = sf.release()
			}
			st.held = nil
			retireAll(st.opened)
		}
	}()
	metas, err := l.idx.Segments()
	if err != nil {
		return st, fmt.Errorf("read segment index: %w", err)
	}
	st.metas = make(map[int64]SegmentMeta, len(metas))
	for _, m := range metas {
		st.metas[m.BaseOffset] = m
	}
	if st.in.recoveryPoint, err = l.idx.RecoveryPoint(); err != nil {
		return st, fmt.Errorf("read recovery point: %w", err)
	}
	if st.in.logStart, err = l.idx.LogStartOffset(); err != nil {
		return st, fmt.Errorf("read log start offset: %w", err)
	}
	swaps := make([]segmentState, len(ls.swaps))
	swapSegs := make(map[int64]*segment, len(ls.swaps))
	for i, base := range ls.swaps {
		swaps[i] = segmentState{base: base, swap: true}
		// Complete and synced before its commit point: read it all, trusting no
		// index data (which may describe the file it replaces).
		s, err := l.readSegment(&swaps[i], SegmentMeta{}, -1, -1)
		if err != nil {
			return st, err
		}
		swapSegs[base] = s
		st.opened = append(st.opened, s)
		st.held = append(st.held, s.file)
	}
	files, replaced := finishSwaps(ls.bases, swaps)
	st.in.files, st.in.replaced = files, replaced
	var read []*segment
	for i := countExpired(files, st.in.logStart); i < len(files); i++ {
		next := int64(-1)
		if i+1 < len(files) {
			next = files[i+1].base
		}
		s := swapSegs[files[i].base]
		if !files[i].swap {
			if s, err = l.readSegment(&files[i], st.metas[files[i].base], st.in.recoveryPoint, next); err != nil {
				return st, err
			}
			st.opened = append(st.opened, s)
			_ = s.file.release() // to the cache: opened again if needed
		}
		read = append(read, s)
		if !files[i].endsAt(next) {
			break
		}
	}
	// The log's segments in order. A swap not reached is renamed all the same,
	// and then removed like any file the plan drops, so it needs no descriptor.
	for _, s := range st.opened {
		if !slices.Contains(read, s) {
			_ = s.file.retire()
		}
	}
	st.opened = read
	return st, nil
}

// listing is what a log's directory holds.
type listing struct {
	bases   []int64 // segment files (%020d.log), ascending
	cleaned []int64 // rewrites not committed (%020d.log.cleaned)
	swaps   []int64 // rewrites committed but not finished (%020d.log.swap), ascending
}

// listSegments lists the segment files and the leftovers of rewrites.
func (l *Log) listSegments() (listing, error) {
	var ls listing
	names, err := l.fs.List(l.dir)
	if err != nil {
		return ls, err
	}
	for _, name := range names {
		var list *[]int64
		base, ok := parseSegmentName(name)
		switch {
		case ok:
			list = &ls.bases
		case strings.HasSuffix(name, cleanedSuffix):
			base, ok = parseSegmentName(strings.TrimSuffix(name, ".cleaned"))
			list = &ls.cleaned
		case strings.HasSuffix(name, swapSuffix):
			base, ok = parseSegmentName(strings.TrimSuffix(name, ".swap"))
			list = &ls.swaps
		}
		if !ok {
			continue // not ours (leader-epochs and the like)
		}
		if fi, err := l.fs.Stat(l.fs.PathJoin(l.dir, name)); err != nil {
			return ls, err
		} else if !fi.Mode().IsRegular() {
			continue
		}
		*list = append(*list, base)
	}
	slices.Sort(ls.bases)
	slices.Sort(ls.cleaned)
	slices.Sort(ls.swaps)
	return ls, nil
}

// readSegment opens the segment file of f.base and fills in both f (what the
// plan needs) and the returned segment (what the log needs, timestamps too),
// whose file it returns acquired: the caller releases it.
// A segment whose recorded metadata m is trusted (trustMeta; next is the next
// file's base offset, -1 if none) and whose first batch header agrees is not
// read further. Otherwise the segment is checked batch by batch from its last
// verifiable index entry at or below the recovery point rp (or from its start),
// and its index entries after that point are rebuilt; f.damage says why the
// bytes from f.size on are not valid batches. With rp < 0 no index entry is
// trusted.
func (l *Log) readSegment(f *segmentState, m SegmentMeta, rp, next int64) (s *segment, err error) {
	base := f.base
	path := l.segmentPath(base) // a swap file is renamed to it before the log is served
	open := path
	if f.swap {
		open = l.swapPath(base)
	}
	file, err := l.fs.OpenReadWrite(open, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	fi, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, err
	}
	sf := newOpenSegFile(l.cfg.Files, l.fs, file, path) // held (acquired) by this read
	s = &segment{base: base, file: sf, next: base, maxTs: -1, firstTs: -1}
	defer func() {
		if err != nil {
			_ = sf.retire() // not s.file: an error return has set s to nil
			_ = sf.release()
			return
		}
		f.size, f.next = s.size, s.next
	}()
	fileSize := fi.Size()
	f.read, f.fileSize = true, fileSize

	if trustMeta(m, base, fileSize, rp, next) {
		if m.Size == 0 {
			return s, nil
		}
		if h, err := readHeaderAt(file, 0, fileSize); err == nil && h.BaseOffset >= base && h.NextOffset() <= m.NextOffset {
			s.size, s.next, s.maxTs = m.Size, m.NextOffset, m.MaxTimestamp
			s.firstTs = h.MaxTimestamp
			return s, nil
		}
		// The recorded metadata does not describe this file: check it.
	}

	// Where to start checking: the last index entry at or below the recovery point,
	// if the batch it points at is really there.
	start := IndexEntry{Offset: base, Pos: 0, MaxTimestampBefore: -1}
	if e, ok, err := l.idx.LookupOffset(base, rp); err != nil {
		return nil, fmt.Errorf("read index of segment %d: %w", base, err)
	} else if ok && e.Pos > 0 && e.Offset > base && rp >= 0 {
		if h, _, err := readBatch(file, e.Pos, fileSize, nil); err == nil && h.BaseOffset == e.Offset {
			start = e
		}
	}
	if err := l.idx.TruncateEntries(base, start.Offset+1); err != nil {
		return nil, fmt.Errorf("truncate index of segment %d: %w", base, err)
	}

	pos, nextOff, maxTs := start.Pos, start.Offset, start.MaxTimestampBefore
	var bytesSince int64
	var buf []byte
	for pos < fileSize {
		var h batch.Header
		h, buf, err = readBatch(file, pos, fileSize, buf)
		if err == nil && h.BaseOffset < nextOff { // a higher one follows a gap compaction left
			err = fmt.Errorf("base offset %d, expected at least %d", h.BaseOffset, nextOff)
		}
		if err != nil {
			f.damage, err = err, nil
			break
		}
		if pos > 0 && bytesSince >= l.cfg.IndexIntervalBytes {
			if err := l.idx.PutEntry(base, IndexEntry{Offset: h.BaseOffset, Pos: pos, MaxTimestampBefore: maxTs}); err != nil {
				return nil, fmt.Errorf("rebuild index of segment %d: %w", base, err)
			}
			bytesSince = 0
		}
		bytesSince += h.Size()
		pos += h.Size()
		nextOff = h.NextOffset()
		maxTs = max(maxTs, h.MaxTimestamp)
	}
	s.size, s.next, s.maxTs = pos, nextOff, maxTs
	if pos > 0 {
		h, err := readHeaderAt(file, 0, pos)
		if err != nil {
			return nil, &CorruptionError{File: path, Pos: 0, Err: err}
		}
		s.firstTs = h.MaxTimestamp
	}
	f.checked = true
	return s, nil
}
