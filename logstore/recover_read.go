package logstore

import (
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"

	"skiff/internal/batch"
)

// diskState is what recovery read before deciding anything.
type diskState struct {
	in     recoveryInput
	metas  map[int64]SegmentMeta // the index's segment metadata by base offset
	opened []*segment            // the files read, in order, open
}

// readSegments lists the segment files, reads the index's view of them, and
// reads the files planRecovery needs: from the first one not expired, each
// trusted from its metadata or else checked batch by batch (rebuilding its index
// entries), up to the first one that does not end where the next one begins.
// The later files are either removed or the cause of an error, so they are not
// opened. A directory with no segment file is a new log: the index is not read.
// On error nothing is left open.
func (l *Log) readSegments() (st diskState, err error) {
	bases, err := l.listSegments()
	if err != nil || len(bases) == 0 {
		return st, err
	}
	defer func() {
		if err != nil {
			for _, s := range st.opened {
				_ = s.file.unref()
			}
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
	files := make([]segmentState, len(bases))
	for i, base := range bases {
		files[i].base = base
	}
	st.in.files = files
	for i := countExpired(files, st.in.logStart); i < len(files); i++ {
		next := int64(-1)
		if i+1 < len(files) {
			next = files[i+1].base
		}
		s, err := l.readSegment(&files[i], st.metas[files[i].base], st.in.recoveryPoint, next)
		if err != nil {
			return st, err
		}
		st.opened = append(st.opened, s)
		if !files[i].endsAt(next) {
			break
		}
	}
	return st, nil
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

// readSegment opens the segment file of f.base and fills in both f (what the
// plan needs) and the returned segment (what the log needs, timestamps too).
// A segment whose recorded metadata m is trusted (trustMeta; next is the next
// file's base offset, -1 if none) and whose first batch header agrees is not
// read further. Otherwise the segment is checked batch by batch from its last
// verifiable index entry at or below the recovery point rp (or from its start),
// and its index entries after that point are rebuilt; f.damage says why the
// bytes from f.size on are not valid batches.
func (l *Log) readSegment(f *segmentState, m SegmentMeta, rp, next int64) (s *segment, err error) {
	base := f.base
	path := l.segmentPath(base)
	file, err := l.fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	fi, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, err
	}
	sf := newSegFile(file, path)
	s = &segment{base: base, file: sf, next: base, maxTs: -1, firstTs: -1}
	defer func() {
		if err != nil {
			_ = sf.unref() // not s.file: an error return has set s to nil
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
		if h, err := readHeaderAt(file, 0, fileSize); err == nil && h.BaseOffset == base {
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
	} else if ok && e.Pos > 0 && e.Offset > base {
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
		if err == nil && h.BaseOffset != nextOff {
			err = fmt.Errorf("base offset %d, expected %d", h.BaseOffset, nextOff)
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
