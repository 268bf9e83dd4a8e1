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
// probing, which stays short below half full: the table doubles at half full up
// to capSlots, and is full at 90% of that (Kafka's load factor).
//
// Beside the table, one bit per offset from the base says whether the record
// there is the latest of its key: set when a key is put, cleared for the offset
// it replaces. A rewrite asks it instead of hashing the keys of the part the map
// covers, and skips a batch none of whose bits is set without reading its
// records. It takes an eighth of what the table may, so it too bounds how far
// past the base the map reaches.
type offsetMap struct {
	seed0, seed1 maphash.Seed
	slots        []slot
	used         int
	capSlots     int   // the largest table: a power of two
	base         int64 // offsets are stored as offset-base+1
	// latest is the largest offset the map covers: records up to it were read
	// into it (base-1: none).
	latest  int64
	current []uint64 // bit i: offset base+i is the latest of its key (or must be read)
	maxBits int64
	sink    uint32 // what putAll's warming loads read, so that its loads are not optimised away
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
	for int64(2*c)*slotBytes+int64(2*c)*slotBytes/8 <= maxBytes {
		c *= 2
	}
	return &offsetMap{seed0: maphash.MakeSeed(), seed1: maphash.MakeSeed(), capSlots: c, latest: -1,
		maxBits: min(int64(c)*slotBytes, math.MaxUint32)}
}

// reset empties the map, keeping its memory, for offsets from base on.
func (m *offsetMap) reset(base int64) {
	clear(m.slots)
	clear(m.current)
	m.current = m.current[:0]
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
	h0, h1 := m.hash(key)
	return m.putHashed(h0, h1, offset)
}

// putHashed is put of a key whose hash is h0, h1.
func (m *offsetMap) putHashed(h0 uint64, h1 uint32, offset int64) bool {
	rel := offset - m.base
	if rel < 0 || rel >= m.maxBits {
		return false
	}
	if m.used >= len(m.slots)/2 && len(m.slots) < m.capSlots {
		m.grow()
	}
	i, ok := m.find(h0, h1)
	if ok {
		m.setCurrent(int64(m.slots[i].off)-1, false)
	} else {
		if m.full() {
			return false
		}
		m.used++
		m.slots[i].h0, m.slots[i].h1 = h0, h1
	}
	m.slots[i].off = uint32(rel + 1)
	m.setCurrent(rel, true)
	return true
}

// keepAll marks offsets from..to (within the map's range) to be read in full
// by a rewrite: a batch whose keys could not be read.
func (m *offsetMap) keepAll(from, to int64) {
	for o := max(from, m.base); o <= to && o-m.base < m.maxBits; o++ {
		m.setCurrent(o-m.base, true)
	}
}

func (m *offsetMap) setCurrent(rel int64, on bool) {
	w := int(rel >> 6)
	for w >= len(m.current) {
		m.current = append(m.current, 0)
	}
	if on {
		m.current[w] |= 1 << (rel & 63)
	} else {
		m.current[w] &^= 1 << (rel & 63)
	}
}

// covers reports whether offset is in the part the map covers: its bits answer
// for it.
func (m *offsetMap) covers(offset int64) bool { return offset >= m.base && offset <= m.latest }

// isCurrent reports whether the record at offset (covered) is the latest of its
// key.
func (m *offsetMap) isCurrent(offset int64) bool {
	rel := offset - m.base
	w := int(rel >> 6)
	return w < len(m.current) && m.current[w]&(1<<(rel&63)) != 0
}

// anyCurrent reports whether a record at an offset from..to (covered) is the
// latest of its key.
func (m *offsetMap) anyCurrent(from, to int64) bool {
	lo, hi := from-m.base, to-m.base
	for w := lo >> 6; w <= hi>>6 && int(w) < len(m.current); w++ {
		word := m.current[w]
		if w == lo>>6 {
			word &^= 1<<(lo&63) - 1
		}
		if w == hi>>6 && hi&63 != 63 {
			word &= 1<<(hi&63+1) - 1
		}
		if word != 0 {
			return true
		}
	}
	return false
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

// warmBlock is how many keys putAll warms at a time: enough misses in flight
// to cover a miss's latency, few enough that their lines (8 KiB) are still in
// the L1 cache when their keys are put. Warming a whole batch of 8,000 records
// at once (what franz-go sends) left most lines evicted by the time their keys
// were put (docs/performance.md, "Cutting the cleaner's CPU further").
const warmBlock = 128

// putAll puts the keys in order, as putHashed; it stops at the first refused
// and reports false. It loads the home slots of a block of keys in a loop whose
// loads do not wait for each other, then puts them, so that the cache misses of
// a block overlap instead of each put waiting for its own: Go has no prefetch
// instruction, and the table is larger than the CPU's caches.
func (m *offsetMap) putAll(keys []hashedKey) bool {
	for len(keys) > 0 {
		blk := keys[:min(warmBlock, len(keys))]
		keys = keys[len(blk):]
		m.warm(blk)
		for _, k := range blk {
			if !m.putHashed(k.h0, k.h1, k.offset) {
				return false
			}
		}
	}
	return true
}

// warm loads the home slot of every hash of keys, in a loop whose loads do not
// wait for each other.
func (m *offsetMap) warm(keys []hashedKey) {
	if len(m.slots) == 0 {
		return
	}
	mask := uint64(len(m.slots) - 1)
	var sum uint32
	for _, k := range keys {
		sum += m.slots[k.h0&mask].off
	}
	m.sink = sum
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
