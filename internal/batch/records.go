package batch

// Building and reading records: Build writes the uncompressed batches the broker
// writes itself (the group coordinator's records in __consumer_offsets); Records
// reads the records of any batch, decompressing a compressed one (the cleaner,
// the produce checks of compacted topics, the coordinator reading its log back).
//
// Record layout (Kafka's, varints are zigzag like encoding/binary.Varint):
//
//	length          varint  bytes after this field
//	attributes      int8    unused, 0
//	timestampDelta  varlong from the batch's baseTimestamp
//	offsetDelta     varint  from the batch's baseOffset
//	keyLength       varint  -1 for a null key
//	key             bytes
//	valueLength     varint  -1 for a null value (a tombstone)
//	value           bytes
//	headerCount     varint
//	headers         headerCount x {keyLength varint, key, valueLength varint, value}

import (
	"encoding/binary"
	"errors"
	"fmt"

	"skiff/internal/compress"
)

// Record is one record of a batch. A nil Key or Value is null on the wire (a nil
// Value is a tombstone); an empty non-nil slice is an empty one.
type Record struct {
	Key, Value []byte
	// Offset is the record's offset; set by Records, ignored by Build.
	Offset int64
	// Timestamp is the record's timestamp in Unix milliseconds; set by Records,
	// ignored by Build (every built record carries the batch timestamp).
	Timestamp int64

	// tail is the record's bytes from offsetDelta to its end (offsetDelta, key,
	// value, headers), set by Records: Rebuild writes it back unchanged behind a
	// new timestampDelta.
	tail []byte
}

// ErrRecord: a record of a batch does not parse.
var ErrRecord = errors.New("batch: malformed record")

// MaxDecompressed is the most bytes the records of one compressed batch may
// decompress to: more is refused (ErrRecord), so that a small hostile batch
// cannot take the broker's memory. Kafka's largest batches are far smaller.
const MaxDecompressed = 128 << 20

// Build returns one uncompressed RecordBatch v2 holding records, all with timestamp
// ts (Unix milliseconds), with no producer id (-1, not idempotent), baseOffset 0 and
// partitionLeaderEpoch -1 (both assigned on append) and its CRC32C set. It panics on
// an empty record list.
func Build(ts int64, records []Record) []byte {
	if len(records) == 0 {
		panic("batch: Build with no records")
	}
	b := make([]byte, HeaderSize, HeaderSize+64*len(records))
	binary.BigEndian.PutUint64(b[0:], 0)
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], 0xffffffff)
	b[offMagic] = Magic
	binary.BigEndian.PutUint16(b[offAttributes:], 0)
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(len(records)-1))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[offProducerID:], 0xffffffffffffffff)
	binary.BigEndian.PutUint16(b[offProducerEpoch:], 0xffff)
	binary.BigEndian.PutUint32(b[offBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(len(records)))
	var body []byte
	for i, r := range records {
		body = body[:0]
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, 0)        // timestampDelta
		body = binary.AppendVarint(body, int64(i)) // offsetDelta
		body = appendBytes(body, r.Key)
		body = appendBytes(body, r.Value)
		body = binary.AppendVarint(body, 0) // no headers
		b = binary.AppendVarint(b, int64(len(body)))
		b = append(b, body...)
	}
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-LogOverhead))
	binary.BigEndian.PutUint32(b[offCRC:], CRC(b))
	return b
}

func appendBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}

// Records calls fn with every record of one whole batch b (checked with Check by
// the caller, or read from a log that did), in order, decompressing a compressed
// batch. Key and Value alias b, or a buffer of the call for a compressed batch:
// copy them to keep them. A record that does not parse, a record count that does
// not match, or compressed records that do not decompress (or would decompress to
// more than MaxDecompressed) is ErrRecord.
func Records(b []byte, fn func(Record) error) error {
	var d Decoder
	return d.Records(b, fn)
}

// Keys calls fn with the key and offset of every record of one whole batch b,
// like Records (Decoder.Keys).
func Keys(b []byte, fn func(key []byte, offset int64) error) error {
	var d Decoder
	return d.Keys(b, fn)
}

// A Decoder reads the records of batches like Records, reusing its
// decompression buffer from one batch to the next: a Record's Key and Value of a
// compressed batch stay valid until the next call. The zero Decoder is ready to
// use; it is not safe for concurrent use.
type Decoder struct {
	buf []byte
}

// Records is the package function Records with d's buffer.
func (d *Decoder) Records(b []byte, fn func(Record) error) error {
	return d.each(b, func(h *Header, i int32, rec []byte) error {
		r, err := parseRecord(rec, h)
		if err != nil {
			return badRecord(i, err)
		}
		return fn(r)
	})
}

// Keys calls fn with the key (nil for a null key) and offset of every record of
// one whole batch b, like Records but reading only as far as the key of each
// record: its value and headers are skipped unchecked (a reader that needs them
// reads the batch with Records). It is what the cleaner's key map reads.
func (d *Decoder) Keys(b []byte, fn func(key []byte, offset int64) error) error {
	return d.each(b, func(h *Header, i int32, rec []byte) error {
		if len(rec) < 1 {
			return badRecord(i, errors.New("empty"))
		}
		_, k := binary.Varint(rec[1:]) // after the attributes
		if k <= 0 {
			return badRecord(i, errors.New("bad timestamp delta"))
		}
		rec = rec[1+k:]
		offDelta, k := binary.Varint(rec)
		if k <= 0 || offDelta < 0 || offDelta > int64(h.LastOffsetDelta) {
			return badRecord(i, errors.New("bad offset delta"))
		}
		key, _, err := readBytes(rec[k:])
		if err != nil {
			return badRecord(i, fmt.Errorf("key: %v", err))
		}
		return fn(key, h.BaseOffset+offDelta)
	})
}

func badRecord(i int32, err error) error { return fmt.Errorf("%w: record %d: %v", ErrRecord, i, err) }

// each calls fn with the bytes of record i of batch b (after its length), for
// every record in order, decompressing them first if need be; fn's error ends
// the walk and is returned as it is.
func (d *Decoder) each(b []byte, fn func(h *Header, i int32, rec []byte) error) error {
	h, err := ParseHeader(b)
	if err != nil {
		return err
	}
	if h.Size() > int64(len(b)) {
		return fmt.Errorf("%w: batch of %d bytes, %d given", ErrLength, h.Size(), len(b))
	}
	rest := b[HeaderSize:h.Size()]
	if c := h.Codec(); c != compress.None {
		d.buf, err = compress.Decompress(c, d.buf[:0], rest, MaxDecompressed)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrRecord, err)
		}
		rest = d.buf
	}
	for i := int32(0); i < h.RecordCount; i++ {
		n, k := binary.Varint(rest)
		if k <= 0 || n < 0 || n > int64(len(rest)-k) {
			return fmt.Errorf("%w: record %d: bad length", ErrRecord, i)
		}
		rec := rest[k : k+int(n)]
		rest = rest[k+int(n):]
		if err := fn(&h, i, rec); err != nil {
			return err
		}
	}
	if len(rest) != 0 {
		return fmt.Errorf("%w: %d bytes after the last record", ErrRecord, len(rest))
	}
	return nil
}

func parseRecord(b []byte, h *Header) (Record, error) {
	var r Record
	if len(b) < 1 {
		return r, errors.New("empty")
	}
	b = b[1:] // attributes
	tsDelta, k := binary.Varint(b)
	if k <= 0 {
		return r, errors.New("bad timestamp delta")
	}
	b = b[k:]
	r.tail = b
	offDelta, k := binary.Varint(b)
	if k <= 0 || offDelta < 0 || offDelta > int64(h.LastOffsetDelta) {
		return r, errors.New("bad offset delta")
	}
	b = b[k:]
	var err error
	if r.Key, b, err = readBytes(b); err != nil {
		return r, fmt.Errorf("key: %v", err)
	}
	if r.Value, b, err = readBytes(b); err != nil {
		return r, fmt.Errorf("value: %v", err)
	}
	headers, k := binary.Varint(b)
	if k <= 0 || headers < 0 {
		return r, errors.New("bad header count")
	}
	b = b[k:]
	for j := int64(0); j < headers; j++ {
		if _, b, err = readBytes(b); err != nil {
			return r, fmt.Errorf("header key: %v", err)
		}
		if _, b, err = readBytes(b); err != nil {
			return r, fmt.Errorf("header value: %v", err)
		}
	}
	if len(b) != 0 {
		return r, errors.New("trailing bytes")
	}
	r.Offset = h.BaseOffset + offDelta
	r.Timestamp = h.BaseTimestamp + tsDelta
	if h.Attributes&AttrTimestampType != 0 {
		r.Timestamp = h.MaxTimestamp // LogAppendTime
	}
	return r, nil
}

func readBytes(b []byte) (v, rest []byte, err error) {
	n, k := binary.Varint(b)
	if k <= 0 || n < -1 || n > int64(len(b)-k) {
		return nil, nil, errors.New("bad length")
	}
	if n == -1 {
		return nil, b[k:], nil
	}
	return b[k : k+int(n) : k+int(n)], b[k+int(n):], nil
}
