package compaction

import (
	"hash/maphash"
	"math"
)

// offsetMap maps keys to the latest offset seen for them, as Kafka's
// SkimpyOffsetMap does: a key is stored as a 96-bit hash (a 64-bit one and 32
// bits of an independent one; a collision, which would make one key's records
// look superseded by another's, needs about 2^48 keys), and its offset as a
// 32-bit distance from the map's base offset, so an entry takes 16 bytes
// whatever the key's size, four to a cache line. Open addressing with linear
// probing; it grows by doubling up to capSlots and is full at 90% of that
// (Kafka's load factor), or at an offset 2^32-1 past its base.
type offsetMap struct {
	seed0, seed1 maphash.Seed
	slots        []slot
	used         int
	capSlots     int   // the largest table: a power of two
	base         int64 // offsets are stored as offset-base+1
	// latest is the largest offset the map covers: records up to it were read
	// into it (base-1: none).
	latest int64
}

type slot struct {
	h0  uint64
	h1  uint32
	off uint32 // offset-base+1; 0: empty
}

const (
	slotBytes     = 16
	minSlots      = 1 << 10
	loadFactorPct = 90
)

// newOffsetMap returns an empty map that takes at most about maxBytes.
func newOffsetMap(maxBytes int64) *offsetMap {
	c := minSlots
	for int64(2*c)*slotBytes <= maxBytes {
		c *= 2
	}
	return &offsetMap{seed0: maphash.MakeSeed(), seed1: maphash.MakeSeed(), capSlots: c, latest: -1}
}

// reset empties the map, keeping its memory, for offsets from base on.
func (m *offsetMap) reset(base int64) {
	clear(m.slots)
	m.used = 0
	m.base = base
	m.latest = base - 1
}

// full reports whether no more keys may be added.
func (m *offsetMap) full() bool { return m.used >= m.capSlots*loadFactorPct/100 }

func (m *offsetMap) hash(key []byte) (uint64, uint32) {
	return maphash.Bytes(m.seed0, key), uint32(maphash.Bytes(m.seed1, key))
}

// put records offset (at least the base) for key; it reports false, adding
// nothing, when the map is full and key is new, or offset is too far past the
// base.
func (m *offsetMap) put(key []byte, offset int64) bool {
	rel := offset - m.base + 1
	if rel <= 0 || rel > math.MaxUint32 {
		return false
	}
	h0, h1 := m.hash(key)
	if m.used >= len(m.slots)*loadFactorPct/100 && len(m.slots) < m.capSlots {
		m.grow()
	}
	i, ok := m.find(h0, h1)
	if !ok {
		if m.full() {
			return false
		}
		m.used++
		m.slots[i].h0, m.slots[i].h1 = h0, h1
	}
	m.slots[i].off = uint32(rel)
	return true
}

// get returns the latest offset recorded for key, -1 if none.
func (m *offsetMap) get(key []byte) int64 {
	if m.used == 0 {
		return -1
	}
	i, ok := m.find(m.hash(key))
	if !ok {
		return -1
	}
	return int64(m.slots[i].off) - 1 + m.base
}

// find returns the slot of the hash, or the empty slot where it would go.
func (m *offsetMap) find(h0 uint64, h1 uint32) (int, bool) {
	mask := uint64(len(m.slots) - 1)
	for i := h0 & mask; ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.off == 0 {
			return int(i), false
		}
		if s.h0 == h0 && s.h1 == h1 {
			return int(i), true
		}
	}
}

// grow doubles the table (the first one has minSlots).
func (m *offsetMap) grow() {
	n := max(2*len(m.slots), minSlots)
	old := m.slots
	m.slots = make([]slot, n)
	for _, s := range old {
		if s.off != 0 {
			i, _ := m.find(s.h0, s.h1)
			m.slots[i] = s
		}
	}
}
