package kafkaapi

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errProduceCutShort is made once: produceShape runs for every Produce, and
// building its error there cost every request an fmt.Errorf.
var errProduceCutShort = fmt.Errorf("%w: produce body cut short", errMalformed)

// produceShape walks a Produce body of a served version (v3..v7 share one layout:
// transactional_id nullable string, acks int16, timeout_ms int32, topics array of
// {name string, partitions array of {index int32, records nullable bytes}}) without
// allocating, and returns its entries (produceEntries). It fails where the body is
// cut short, so an array length is never believed before its elements are there.
func produceShape(b []byte) (int, error) {
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

// produceEntries counts the partitions of each topic of a Produce request, as
// produceShape does before it is decoded.
func produceEntries(r *kmsg.ProduceRequest) (n int) {
	for _, t := range r.Topics {
		n += topicEntries(len(t.Partitions))
	}
	return n
}
