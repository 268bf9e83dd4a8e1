package kafkaapi

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errProduceCutShort is made once: produceShape runs for every Produce, and
// building its error there cost every request an fmt.Errorf.
var errProduceCutShort = fmt.Errorf("%w: produce body cut short", errMalformed)

// produceShape walks a Produce body of a served version without allocating, and
// returns its entries (produceEntries), counting each tagged field of a flexible
// version as one more: kmsg keeps unknown tags in maps, so a body of many tags
// must be bounded as a body of many partitions is. It fails where the body is cut
// short, so an array length is never believed before its elements are there, and
// exactly where kmsg's decoding fails (FuzzProduceShape). v3..v8 share one layout:
// transactional_id nullable string, acks int16, timeout_ms int32, topics array of
// {name string, partitions array of {index int32, records nullable bytes}}; v9+
// (produceShapeFlexible) is the same in compact encoding, with tagged fields.
func produceShape(b []byte, version int16) (int, error) {
	if version >= 9 {
		return produceShapeFlexible(b)
	}
	short := errProduceCutShort
	take := func(n int) bool {
		if n < 0 || n > len(b) {
			return false
		}
		b = b[n:]
		return true
	}
	i16 := func() (int, bool) {
		if len(b) < 2 {
			return 0, false
		}
		v := int16(binary.BigEndian.Uint16(b))
		b = b[2:]
		return int(v), true
	}
	i32 := func() (int, bool) {
		if len(b) < 4 {
			return 0, false
		}
		v := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		return int(v), true
	}
	// transactional_id (nullable), acks, timeout_ms
	if n, ok := i16(); !ok || !take(max(n, 0)+6) {
		return 0, short
	}
	topics, ok := i32()
	if !ok {
		return 0, short
	}
	entries := 0
	for range max(topics, 0) {
		if n, ok := i16(); !ok || !take(n) {
			return 0, short
		}
		parts, ok := i32()
		if !ok {
			return 0, short
		}
		entries += topicEntries(parts)
		for range max(parts, 0) {
			if !take(4) {
				return 0, short
			}
			if n, ok := i32(); !ok || !take(max(n, 0)) {
				return 0, short
			}
		}
	}
	return entries, nil
}

// produceShapeFlexible is produceShape for v9+: compact strings, arrays and
// bytes (unsigned varint lengths, plus one), and tagged fields after each
// partition, topic and the request. Its checks are kmsg's: an array is refused
// when it claims more elements than the bytes left allow at kmsg's least size per
// element (2 bytes a topic, 6 a partition).
func produceShapeFlexible(b []byte) (int, error) {
	short := errProduceCutShort
	bad := false
	uvarint := func() uint32 {
		if len(b) > 0 && b[0] < 0x80 {
			v := uint32(b[0])
			b = b[1:]
			return v
		}
		v, n := uvarint32(b)
		if n <= 0 {
			bad = true
			return 0
		}
		b = b[n:]
		return v
	}
	take := func(n int) bool {
		if n < 0 || n > len(b) {
			return false
		}
		b = b[n:]
		return true
	}
	// array reads a compact array length, refused as kmsg refuses it.
	array := func(least int64) (int32, bool) {
		l := int32(uvarint()) - 1
		return l, !bad && int64(l)*least <= int64(len(b))
	}
	entries := 0
	tags := func() bool {
		for num := uvarint(); num > 0 && !bad; num-- {
			uvarint() // the tag
			if size := uvarint(); bad || !take(int(size)) {
				return false
			}
			entries++
		}
		return !bad
	}
	// transactional_id (compact nullable), acks, timeout_ms
	if l := int(uvarint()) - 1; bad || !take(max(l, 0)+6) {
		return 0, short
	}
	topics, ok := array(2)
	if !ok {
		return 0, short
	}
	for range max(topics, 0) {
		if l := int(uvarint()) - 1; bad || !take(l) {
			return 0, short
		}
		parts, ok := array(6)
		if !ok {
			return 0, short
		}
		entries += topicEntries(int(parts))
		for range max(parts, 0) {
			if !take(4) {
				return 0, short
			}
			if l := int(uvarint()) - 1; bad || !take(max(l, 0)) || !tags() {
				return 0, short
			}
		}
		if !tags() {
			return 0, short
		}
	}
	if !tags() {
		return 0, short
	}
	return entries, nil
}

// uvarint32 decodes an unsigned varint of at most 32 bits as kmsg does: at most 5
// bytes, the fifth at most 0x0f; n <= 0 when it is cut short or overflows.
func uvarint32(b []byte) (v uint32, n int) {
	for i := 0; i < 5; i++ {
		if i == len(b) {
			return 0, 0
		}
		c := b[i]
		if i == 4 {
			if c > 0x0f {
				return 0, -5
			}
			return v | uint32(c)<<28, 5
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0 // not reached
}

// produceEntries counts the partitions of each topic of a Produce request, as
// produceShape does before it is decoded, and the unknown tagged fields kmsg kept
// (produceShape counts every tag; a key repeated is kept once).
func produceEntries(r *kmsg.ProduceRequest) (n int) {
	n = r.UnknownTags.Len()
	for i := range r.Topics {
		t := &r.Topics[i]
		n += topicEntries(len(t.Partitions)) + t.UnknownTags.Len()
		for j := range t.Partitions {
			n += t.Partitions[j].UnknownTags.Len()
		}
	}
	return n
}
