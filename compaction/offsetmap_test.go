package compaction

import (
	"fmt"
	"testing"
)

// TestOffsetMap: the latest offset of every key is returned, unknown keys give
// -1, and a map bounded to a few thousand entries refuses new keys once full
// while still updating the ones it has; reset empties it.
func TestOffsetMap(t *testing.T) {
	m := newOffsetMap(48 << 10) // 2,048 slots of 16 bytes (the largest power of two)
	m.reset(0)
	if m.capSlots != 2048 {
		t.Fatalf("capSlots %d", m.capSlots)
	}
	n := 0
	for i := 0; ; i++ {
		if !m.put([]byte(fmt.Sprintf("key-%d", i)), int64(i)) {
			break
		}
		n++
	}
	if n != 2048*9/10 || !m.full() {
		t.Fatalf("%d keys fit, full %v", n, m.full())
	}
	if !m.put([]byte("key-7"), 10_000) {
		t.Fatal("a known key refused by a full map")
	}
	for i := 0; i < n; i++ {
		want := int64(i)
		if i == 7 {
			want = 10_000
		}
		if got := m.get([]byte(fmt.Sprintf("key-%d", i))); got != want {
			t.Fatalf("key-%d = %d, want %d", i, got, want)
		}
	}
	if got := m.get([]byte("missing")); got != -1 {
		t.Fatalf("missing key = %d", got)
	}
	m.reset(1000)
	if m.used != 0 || m.get([]byte("key-1")) != -1 || m.latest != 999 {
		t.Fatal("reset kept entries")
	}
	if m.put([]byte("early"), 999) || m.put([]byte("far"), 1000+m.maxBits) || !m.put([]byte("k"), 1000+m.maxBits-1) || m.get([]byte("k")) != 1000+m.maxBits-1 {
		t.Fatal("offsets outside the map's range")
	}
}

// TestOffsetMapCurrent: the bit of an offset says whether its record is the
// latest of its key, and anyCurrent finds one in any range, across words.
func TestOffsetMapCurrent(t *testing.T) {
	m := newOffsetMap(1 << 20)
	m.reset(100)
	for o := int64(100); o < 400; o++ {
		m.put([]byte(fmt.Sprintf("k%d", o%50)), o) // keys 0..49 over and over: the last 50 offsets are current
	}
	m.latest = 399
	for o := int64(100); o < 400; o++ {
		if got := m.isCurrent(o); got != (o >= 350) {
			t.Fatalf("offset %d current %v", o, got)
		}
	}
	for _, c := range []struct {
		from, to int64
		want     bool
	}{{100, 349, false}, {100, 350, true}, {349, 349, false}, {350, 350, true}, {399, 399, true}, {160, 227, false}, {300, 399, true}} {
		if got := m.anyCurrent(c.from, c.to); got != c.want {
			t.Errorf("anyCurrent(%d, %d) = %v", c.from, c.to, got)
		}
	}
	m.keepAll(200, 203)
	if !m.anyCurrent(160, 227) || !m.isCurrent(201) || m.isCurrent(204) {
		t.Fatal("keepAll")
	}
	if !m.covers(100) || !m.covers(399) || m.covers(99) || m.covers(400) {
		t.Fatal("covers")
	}
}

// TestOffsetMapPutAll: putAll, which warms the slots of a block of keys before
// it puts them, leaves the map as putting the keys one by one does, across
// block boundaries and table growth, and stops at the first key a full map
// refuses, with the keys before it put.
func TestOffsetMapPutAll(t *testing.T) {
	one, all := newOffsetMap(1<<20), newOffsetMap(1<<20)
	one.reset(0)
	all.reset(0)
	var keys []hashedKey
	for o := int64(0); o < 5_000; o++ {
		key := []byte(fmt.Sprintf("k%d", o*7%3_001)) // keys repeat, in and across blocks
		if !one.put(key, o) {
			t.Fatalf("put %d refused", o)
		}
		h0, h1 := all.hash(key)
		keys = append(keys, hashedKey{h0, h1, o})
		if len(keys) == 3*warmBlock+5 || o == 4_999 { // batches that end mid-block
			if !all.putAll(keys) {
				t.Fatalf("putAll refused at %d", o)
			}
			keys = keys[:0]
		}
	}
	one.latest, all.latest = 4_999, 4_999
	for o := int64(0); o < 5_000; o++ {
		key := []byte(fmt.Sprintf("k%d", o*7%3_001))
		if one.get(key) != all.get(key) || one.isCurrent(o) != all.isCurrent(o) {
			t.Fatalf("offset %d: get %d/%d, current %v/%v", o, one.get(key), all.get(key), one.isCurrent(o), all.isCurrent(o))
		}
	}
	if one.used != all.used || len(one.slots) != len(all.slots) {
		t.Fatalf("used %d/%d, slots %d/%d", one.used, all.used, len(one.slots), len(all.slots))
	}

	full := newOffsetMap(48 << 10) // 2,048 slots: 1,843 keys fit
	full.reset(0)
	keys = keys[:0]
	for o := int64(0); o < 2_000; o++ {
		h0, h1 := full.hash([]byte(fmt.Sprintf("key-%d", o)))
		keys = append(keys, hashedKey{h0, h1, o})
	}
	if full.putAll(keys) {
		t.Fatal("a full map took every key")
	}
	if full.used != 2048*9/10 || full.get([]byte("key-0")) != 0 || full.get([]byte(fmt.Sprintf("key-%d", full.used-1))) != int64(full.used-1) ||
		full.get([]byte(fmt.Sprintf("key-%d", full.used))) != -1 {
		t.Fatalf("after the refusal: %d keys, the last put %d, the refused %d", full.used,
			full.get([]byte(fmt.Sprintf("key-%d", full.used-1))), full.get([]byte(fmt.Sprintf("key-%d", full.used))))
	}
}
