package kafkaapi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzMaxEntries is the max.partitions.per.request of the decode fuzz target.
const fuzzMaxEntries = 1000

// decodeSlack is allocation the decode of any frame may take beyond decodeFactor
// times its size: the request struct and header, and the granularity of the
// allocation counter (it counts small allocations by span).
const decodeSlack = 256 << 10

var allocSample = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}

// heapAllocated is the running total of bytes allocated on the heap; cheap, but it
// counts small allocations by span.
func heapAllocated() uint64 {
	metrics.Read(allocSample)
	return allocSample[0].Value.Uint64()
}

// heapAllocatedExact is the running total of bytes allocated on the heap, exact
// (it stops the world).
func heapAllocatedExact() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// decodeAllocation is the least heap allocation of runs decodes of frame (with
// maxEntries, and the versions of transaction version 2 served if txnV2),
// measured with counter (global to the process: the least run is the one least
// disturbed).
func decodeAllocation(counter func() uint64, frame []byte, maxEntries, runs int, txnV2 bool) uint64 {
	least := uint64(math.MaxUint64)
	for range runs {
		before := counter()
		decodeFrameWith(frame, maxEntries, txnV2)
		least = min(least, counter()-before)
	}
	return least
}

// encodeFrame frames req (header v1, or v2 for flexible requests) without the size
// prefix, as decodeFrame takes it.
func encodeFrame(req kmsg.Request, corr int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "fuzz"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

// servedRequests returns one request with default fields for every served key and
// version, and one whose lists hold an entry each, as seeds.
func servedRequests() []kmsg.Request { return servedRequestsWith(false) }

// servedRequestsWith is servedRequests with the versions of transaction version 2
// (txnV2Max) too when txnV2 is set; those up to brokerMax either way.
func servedRequestsWith(txnV2 bool) []kmsg.Request {
	var out []kmsg.Request
	for _, a := range apis {
		if a == nil {
			continue
		}
		key := a.key
		last := max(a.max, a.brokerMax)
		if txnV2 {
			last = max(last, a.txnV2Max)
		}
		for v := a.min; v <= last; v++ {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			out = append(out, req)
			full := kmsg.RequestForKey(key)
			full.SetVersion(v)
			fillOne(reflect.ValueOf(full).Elem(), 0)
			out = append(out, full)
		}
	}
	return out
}

// fillOne gives every list of v one element (recursively) and every string a value,
// so that encoded seeds reach the decoders of nested structs.
func fillOne(v reflect.Value, depth int) {
	if depth > 4 {
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillOne(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte("seed"))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		if d, ok := s.Index(0).Addr().Interface().(interface{ Default() }); ok {
			d.Default()
		}
		fillOne(s.Index(0), depth+1)
		v.Set(s)
	case reflect.String:
		v.SetString("seed")
	case reflect.Pointer:
		if v.Type().Elem().Kind() == reflect.String {
			s := "seed"
			v.Set(reflect.ValueOf(&s))
		}
	}
}

// FuzzDecodeRequest feeds arbitrary frames through decodeFrame, the parse path of
// the connection loop (header, tagged fields, Produce shape walk, kmsg decode, entry
// count), without and with the versions of transaction version 2 (Config.TxnV2).
// Invariants:
//   - it never panics;
//   - without them, a version only they serve is not decoded, and any other frame
//     decodes as with them;
//   - decoding allocates at most decodeFactor times the frame size (plus
//     decodeSlack): the budget a connection takes before reading a frame covers it;
//     for Produce, at most the shape walk's entries times entryBytes beyond that;
//   - a Produce body is accepted by produceShape exactly when kmsg decodes it, with
//     the same entry count;
//   - a decoded request names at most fuzzMaxEntries entries, and re-encoded, it
//     decodes to the same request.
func FuzzDecodeRequest(f *testing.F) {
	for i, req := range servedRequestsWith(true) {
		f.Add(encodeFrame(req, int32(i)))
	}
	f.Add([]byte{0, 18, 0, 3, 0, 0, 0, 1, 0xff, 0xff, 0})   // ApiVersions v3, null client id
	f.Add([]byte{0, 18, 0, 9, 0, 0, 0, 1, 0, 0})            // unsupported version
	f.Add([]byte{0, 1, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}) // Fetch cut short
	f.Fuzz(func(t *testing.T, frame []byte) {
		tv1, tv1Err := decodeFrame(frame, fuzzMaxEntries)
		before := heapAllocated()
		d, err := decodeFrameWith(frame, fuzzMaxEntries, true)
		grown := heapAllocated() - before
		switch served := servedAt(d.hdr.Key, d.hdr.Version) != nil; {
		case !served && tv1.req != nil:
			t.Fatalf("key %d v%d decoded without transaction version 2", d.hdr.Key, d.hdr.Version)
		case served && ((tv1.req == nil) != (d.req == nil) || (tv1Err == nil) != (err == nil)):
			t.Fatalf("key %d v%d: decoded %v (%v) without transaction version 2, %v (%v) with it", d.hdr.Key, d.hdr.Version, tv1.req != nil, tv1Err, d.req != nil, err)
		}
		if limit := uint64(decodeFactor*len(frame) + decodeSlack); grown > limit {
			// The counter is global: other goroutines (a node of this test process)
			// may have allocated meanwhile. Decoding allocates the same each time, so
			// the least of a few more runs is what it takes.
			grown = decodeAllocation(heapAllocated, frame, fuzzMaxEntries, 3, true)
			if grown > limit {
				t.Fatalf("decoding a %d-byte frame (key %d v%d) allocated %d bytes, more than %d", len(frame), d.hdr.Key, d.hdr.Version, grown, limit)
			}
		}
		if err != nil {
			if d.req != nil {
				t.Fatalf("error %v with a decoded request", err)
			}
			return
		}
		if d.req == nil {
			if servedWith(d.hdr.Key, d.hdr.Version, true) != nil {
				t.Fatalf("served key %d v%d not decoded", d.hdr.Key, d.hdr.Version)
			}
			return
		}
		if d.entries > fuzzMaxEntries || d.entries != d.api.entries(d.req) {
			t.Fatalf("%d entries (limit %d, recount %d)", d.entries, fuzzMaxEntries, d.api.entries(d.req))
		}
		// Re-encoded, the request decodes to itself.
		again := kmsg.RequestForKey(d.hdr.Key)
		again.SetVersion(d.hdr.Version)
		if err := again.ReadFrom(d.req.AppendTo(nil)); err != nil {
			t.Fatalf("re-encoded %s v%d does not decode: %v", kmsg.NameForKey(d.hdr.Key), d.hdr.Version, err)
		}
		if !reflect.DeepEqual(again, d.req) {
			t.Fatalf("re-encoded %s v%d decodes differently:\n%+v\n%+v", kmsg.NameForKey(d.hdr.Key), d.hdr.Version, d.req, again)
		}
	})
}

// FuzzProduceShape checks produceShape against kmsg on arbitrary Produce bodies at
// every served version, the flexible ones (v9+) and v12 (transaction version 2)
// included. Invariants: no panic;
// produceShape accepts a body exactly when kmsg decodes it, and then counts the
// decoded request's entries (its tagged fields as many as it reads: kmsg keeps a
// repeated key once).
func FuzzProduceShape(f *testing.F) {
	for _, req := range servedRequestsWith(true) {
		if req.Key() == 0 {
			f.Add(req.AppendTo(nil), uint8(req.GetVersion()-lookup(0).min))
		}
	}
	f.Add([]byte{0xff, 0xff, 0, 1, 0, 0, 0, 100, 0x7f, 0xff, 0xff, 0xff}, uint8(7-3))
	// v9+: a null transactional id, one topic "t" with one partition of null
	// records, tagged fields at each level (two with the same key at the end).
	flex := []byte{0, 0, 1, 0, 0, 0x3a, 0x98, 2, 2, 't', 2, 0, 0, 0, 0, 0, 1, 5, 1, 'x', 0, 2, 1, 0, 1, 0}
	for v := 9; v <= int(lookup(0).txnV2Max); v++ {
		f.Add(flex, uint8(v-3))
	}
	f.Add([]byte{0, 0, 1, 0, 0, 0x3a, 0x98, 0x80, 0x80, 0x80, 0x80, 0x10}, uint8(9-3)) // a varint past 32 bits
	f.Fuzz(func(t *testing.T, body []byte, v uint8) {
		r := lookup(0)
		version := r.min + int16(v)%(r.txnV2Max-r.min+1)
		n, shapeErr := produceShape(body, version)
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(version)
		err := req.ReadFrom(body)
		switch {
		case (shapeErr == nil) != (err == nil):
			t.Fatalf("v%d: produceShape %v, kmsg %v", version, shapeErr, err)
		case err == nil && n != produceEntries(req) && (version < 9 || n < produceEntries(req)):
			t.Fatalf("v%d: produceShape counts %d entries, the decoded request %d", version, n, produceEntries(req))
		case shapeErr != nil && !errors.Is(shapeErr, errMalformed):
			t.Fatalf("produceShape error %v is not errMalformed", shapeErr)
		}
	})
}

// TestProduceShapeFlexibleTags checks that produceShape counts every tagged field
// of a flexible Produce (they cost kmsg a map entry each), so that a body of many
// tags is refused by max.partitions.per.request like a body of many partitions.
func TestProduceShapeFlexibleTags(t *testing.T) {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(11)
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = "t"
	topic.Partitions = []kmsg.ProduceRequestTopicPartition{kmsg.NewProduceRequestTopicPartition()}
	for k := range uint32(50) {
		topic.Partitions[0].UnknownTags.Set(k, []byte{1})
		req.UnknownTags.Set(k, nil)
	}
	req.Topics = []kmsg.ProduceRequestTopic{topic}
	n, err := produceShape(req.AppendTo(nil), 11)
	if err != nil || n != 101 {
		t.Fatalf("produceShape = %d, %v; want 101 entries (1 partition, 100 tags)", n, err)
	}
	if _, err := decodeFrame(encodeFrame(req, 1), 100); !errors.Is(err, errTooManyPartitions) {
		t.Fatalf("decodeFrame with max 100 entries: %v, want errTooManyPartitions", err)
	}
}

// TestDecodeMemoryBound writes large array lengths at every position of the start of
// every served request (those of transaction version 2 too) and checks that decoding stays within decodeFactor times the
// frame (the property the connection's budget relies on), reporting the largest
// ratio seen.
func TestDecodeMemoryBound(t *testing.T) {
	const size, slack = 16 << 10, 16 << 10
	worst, worstAt := 0.0, ""
	for _, req := range servedRequestsWith(true) {
		enc := encodeFrame(req, 1)
		hdrLen := 10 + 4
		if req.IsFlexible() {
			hdrLen++
		}
		for p := hdrLen; p < min(len(enc), hdrLen+64); p++ {
			for _, div := range []int{1, 2, 3, 4, 6, 8, 16} {
				frame := make([]byte, size)
				copy(frame, enc)
				claim := (size - p - 4) / div
				binary.BigEndian.PutUint32(frame[p:], uint32(claim))
				for _, flex := range []bool{false, true} {
					if flex {
						if !req.IsFlexible() {
							continue
						}
						frame = append(binary.AppendUvarint(frame[:p:p], uint64(claim+1)), frame[p+4:]...)
						frame = frame[:min(len(frame), size)]
					}
					grown := decodeAllocation(heapAllocatedExact, frame, 0, 2, true)
					if grown > slack {
						ratio := float64(grown-slack) / float64(len(frame))
						if ratio > worst {
							worst, worstAt = ratio, fmt.Sprintf("%s v%d, length %d at byte %d", kmsg.NameForKey(req.Key()), req.GetVersion(), claim, p)
						}
					}
					if limit := uint64(decodeFactor*len(frame) + slack); grown > limit {
						t.Errorf("%s v%d: length %d at byte %d: %d bytes allocated for a %d-byte frame, more than %d",
							kmsg.NameForKey(req.Key()), req.GetVersion(), claim, p, grown, len(frame), limit)
					}
				}
			}
		}
	}
	t.Logf("largest decode allocation beyond the slack: %.1f times the frame (%s)", worst, worstAt)
}
