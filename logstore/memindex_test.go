package logstore

import (
	"maps"
	"slices"
	"sort"
	"sync"
)

// MemIndex is an in-memory Index for tests. Clone takes a snapshot (to simulate
// an index that lost its latest writes); DurableWrites counts durable calls.
type MemIndex struct {
	mu            sync.Mutex
	segs          map[int64]SegmentMeta
	offsets       map[int64][]IndexEntry // per segment, ascending Offset
	times         map[int64][]IndexEntry // per segment, ascending MaxTimestampBefore
	rp, start     int64
	cleaner       int64
	DurableWrites int
}

var _ Index = (*MemIndex)(nil)

// NewMemIndex returns an empty in-memory index.
func NewMemIndex() *MemIndex {
	return &MemIndex{segs: map[int64]SegmentMeta{}, offsets: map[int64][]IndexEntry{}, times: map[int64][]IndexEntry{}}
}

// Clone returns a deep copy of m.
func (m *MemIndex) Clone() *MemIndex {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMemIndex()
	c.segs = maps.Clone(m.segs)
	for k, v := range m.offsets {
		c.offsets[k] = slices.Clone(v)
	}
	for k, v := range m.times {
		c.times[k] = slices.Clone(v)
	}
	c.rp, c.start, c.cleaner = m.rp, m.start, m.cleaner
	return c
}

// EntryCount returns the number of offset entries of all segments.
func (m *MemIndex) EntryCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, v := range m.offsets {
		n += len(v)
	}
	return n
}

// Entries returns the offset entries of a segment.
func (m *MemIndex) Entries(segBase int64) []IndexEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.offsets[segBase])
}

// SetEntries replaces the offset and time entries of a segment (to plant bad ones).
func (m *MemIndex) SetEntries(segBase int64, es []IndexEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.offsets[segBase] = slices.Clone(es)
	m.times[segBase] = slices.Clone(es)
}

func (m *MemIndex) Segments() ([]SegmentMeta, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Collect(maps.Values(m.segs)), nil
}

func (m *MemIndex) PutSegment(s SegmentMeta) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.segs[s.BaseOffset] = s
	return nil
}

func (m *MemIndex) DeleteSegment(base int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.segs, base)
	delete(m.offsets, base)
	delete(m.times, base)
	return nil
}

func (m *MemIndex) PutEntry(segBase int64, e IndexEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	put := func(es []IndexEntry, key func(IndexEntry) int64) []IndexEntry {
		i := sort.Search(len(es), func(i int) bool { return key(es[i]) >= key(e) })
		if i < len(es) && key(es[i]) == key(e) {
			es[i] = e
			return es
		}
		return slices.Insert(es, i, e)
	}
	m.offsets[segBase] = put(m.offsets[segBase], func(e IndexEntry) int64 { return e.Offset })
	m.times[segBase] = put(m.times[segBase], func(e IndexEntry) int64 { return e.MaxTimestampBefore })
	return nil
}

func (m *MemIndex) LookupOffset(segBase, offset int64) (IndexEntry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	es := m.offsets[segBase]
	i := sort.Search(len(es), func(i int) bool { return es[i].Offset > offset })
	if i == 0 {
		return IndexEntry{}, false, nil
	}
	return es[i-1], true, nil
}

func (m *MemIndex) LookupTimestamp(segBase, ts int64) (IndexEntry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	es := m.times[segBase]
	i := sort.Search(len(es), func(i int) bool { return es[i].MaxTimestampBefore >= ts })
	if i == 0 {
		return IndexEntry{}, false, nil
	}
	return es[i-1], true, nil
}

func (m *MemIndex) TruncateEntries(segBase, offset int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	drop := func(e IndexEntry) bool { return e.Offset >= offset }
	m.offsets[segBase] = slices.DeleteFunc(m.offsets[segBase], drop)
	m.times[segBase] = slices.DeleteFunc(m.times[segBase], drop)
	return nil
}

func (m *MemIndex) RecoveryPoint() (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rp, nil
}

func (m *MemIndex) SetRecoveryPoint(off int64, durable bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rp = off
	if durable {
		m.DurableWrites++
	}
	return nil
}

func (m *MemIndex) LogStartOffset() (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.start, nil
}

func (m *MemIndex) SetLogStartOffset(off int64, durable bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.start = off
	if durable {
		m.DurableWrites++
	}
	return nil
}

func (m *MemIndex) CleanerPoint() (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cleaner, nil
}

func (m *MemIndex) SetCleanerPoint(off int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cleaner = off
	return nil
}

func (m *MemIndex) Delete() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.segs = map[int64]SegmentMeta{}
	m.offsets = map[int64][]IndexEntry{}
	m.times = map[int64][]IndexEntry{}
	m.rp, m.start, m.cleaner = 0, 0, 0
	return nil
}
