package compaction

import (
	"hash/maphash"
)

// offsetMap maps keys to the latest offset seen for them, as Kafka's
// SkimpyOffsetMap does: a key is stored as a 128-bit hash (two independent
// 64-bit ones; a collision, which would make one key's records look
// superseded by another's, needs about 2^64 keys), so an entry takes 24 bytes
// whatever the key's size. Open addressing with linear probing; it grows by
// doubling up to capSlots and is full at 90% of that (Kafka's load factor).
type offsetMap struct {
	seed0, seed1 maphash.Seed
	slots        []slot
	used         int
	capSlots     int // the largest table: a power of two
	// latest is the largest offset the map covers: records up to it were read
	// into it (-1: none).
	latest int64
}

type slot struct {
	h0, h1 uint64
	off    int64 // offset+1; 0: empty
}

const (
	slotBytes     = 24
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

// reset empties the map, keeping its memory.
func (m *offsetMap) reset() {
	clear(m.slots)
	m.used = 0
	m.latest = -1
}

// full reports whether no more keys may be added.
func (m *offsetMap) full() bool { return m.used >= m.capSlots*loadFactorPct/100 }

// put records offset for key; it reports false, adding nothing, when the map
// is full and key is new.
func (m *offsetMap) put(key []byte, offset int64) bool {
	h0, h1 := maphash.Bytes(m.seed0, key), maphash.Bytes(m.seed1, key)
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
	m.slots[i].off = offset + 1
	return true
}

// get returns the latest offset recorded for key, -1 if none.
func (m *offsetMap) get(key []byte) int64 {
	if len(m.slots) == 0 {
		return -1
	}
	i, ok := m.find(maphash.Bytes(m.seed0, key), maphash.Bytes(m.seed1, key))
	if !ok {
		return -1
	}
	return m.slots[i].off - 1
}

// find returns the slot of the hash, or the empty slot where it would go.
func (m *offsetMap) find(h0, h1 uint64) (int, bool) {
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
