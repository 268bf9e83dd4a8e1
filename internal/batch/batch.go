// Package batch reads and checks Kafka RecordBatch v2 (magic 2) headers in place.
//
// The broker decodes records only where it must: a produced batch is checked
// (length, magic, offsets, CRC32C) and stored whole; only the fields the broker
// owns, baseOffset and partitionLeaderEpoch, are rewritten, and neither is covered
// by the CRC. The log cleaner reads records (decompressing them, records.go) and
// writes batches again with fewer of them (rebuild.go); so do the produce checks
// of compacted topics, which need a key on every record.
//
// A batch as produced is dense: its records have offset deltas 0..recordCount-1
// and lastOffsetDelta is recordCount-1. Compaction keeps a batch's base offset and
// lastOffsetDelta (they carry the producer's sequence range) while it removes
// records, so a batch in a log may hold fewer records than its offsets span, or
// none (Kafka's rule; see docs/format/segment.md).
//
// Byte layout (big endian), from the Kafka protocol documentation:
//
//	 0  baseOffset            int64   assigned by the broker
//	 8  batchLength           int32   bytes after this field
//	12  partitionLeaderEpoch  int32   assigned by the broker
//	16  magic                 int8    must be 2
//	17  crc                   uint32  CRC32C of bytes 21..end
//	21  attributes            int16
//	23  lastOffsetDelta       int32
//	27  baseTimestamp         int64
//	35  maxTimestamp          int64
//	43  producerId            int64
//	51  producerEpoch         int16
//	53  baseSequence          int32
//	57  recordCount           int32
//	61  records...
package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"skiff/internal/compress"
)

// Layout constants of RecordBatch v2; they are Kafka's wire format and must not change.
const (
	HeaderSize = 61 // bytes before the first record
	// LogOverhead is the part of the header not counted by batchLength.
	LogOverhead = 12
	Magic       = 2

	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57
)

// Attribute bits.
const (
	AttrCompressionMask = 0x07
	AttrTimestampType   = 0x08
	AttrTransactional   = 0x10
	AttrControl         = 0x20
	// AttrDeleteHorizon: baseTimestamp holds the time after which the cleaner
	// removes the batch's tombstones (KIP-534), set when a cleaner first kept
	// them; record timestamps stay baseTimestamp + timestampDelta.
	AttrDeleteHorizon = 0x40
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors returned by Parse and Check. They are distinct so that callers can map them
// to Kafka error codes (CORRUPT_MESSAGE for all of them).
var (
	ErrShort       = errors.New("batch: shorter than a record batch header")
	ErrLength      = errors.New("batch: batchLength does not match the bytes")
	ErrMagic       = errors.New("batch: magic is not 2")
	ErrCRC         = errors.New("batch: CRC32C mismatch")
	ErrRecordCount = errors.New("batch: recordCount does not fit lastOffsetDelta")
)

// Header holds the fixed fields of one batch.
type Header struct {
	BaseOffset      int64
	BatchLength     int32
	LeaderEpoch     int32
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	RecordCount     int32
}

// Size is the whole batch size on the wire and on disk.
func (h *Header) Size() int64 { return int64(h.BatchLength) + LogOverhead }

// LastOffset is the offset of the batch's last record.
func (h *Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch.
func (h *Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Transactional reports whether the batch belongs to a transaction.
func (h *Header) Transactional() bool { return h.Attributes&AttrTransactional != 0 }

// Control reports whether the batch is a control batch (transaction markers).
func (h *Header) Control() bool { return h.Attributes&AttrControl != 0 }

// Codec is the batch's compression codec.
func (h *Header) Codec() compress.Codec { return compress.Codec(h.Attributes & AttrCompressionMask) }

// Dense reports whether the batch holds a record for every offset it spans
// (lastOffsetDelta = recordCount-1), as every produced batch must.
func (h *Header) Dense() bool { return h.LastOffsetDelta == h.RecordCount-1 }

// DeleteHorizon returns the time (Unix ms) after which the cleaner may remove the
// batch's tombstones, if a cleaner set one (AttrDeleteHorizon).
func (h *Header) DeleteHorizon() (int64, bool) {
	if h.Attributes&AttrDeleteHorizon == 0 {
		return 0, false
	}
	return h.BaseTimestamp, true
}

// Idempotent reports whether the batch carries a producer id and sequence.
func (h *Header) Idempotent() bool { return h.ProducerID >= 0 }

// LastSequence is the sequence of the batch's last record (wrapping at int32 max as Kafka does).
func (h *Header) LastSequence() int32 {
	s := int64(h.BaseSequence) + int64(h.LastOffsetDelta)
	if s > 1<<31-1 {
		s -= 1 << 31
	}
	return int32(s)
}

// ParseHeader reads the header at the start of b. It checks only that the header is
// there and that magic is 2; b may be longer or shorter than the whole batch.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, ErrShort
	}
	h := Header{
		BaseOffset:      int64(binary.BigEndian.Uint64(b[0:])),
		BatchLength:     int32(binary.BigEndian.Uint32(b[offBatchLength:])),
		LeaderEpoch:     int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])),
		Magic:           int8(b[offMagic]),
		CRC:             binary.BigEndian.Uint32(b[offCRC:]),
		Attributes:      int16(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta: int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:   int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:    int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		ProducerID:      int64(binary.BigEndian.Uint64(b[offProducerID:])),
		ProducerEpoch:   int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		BaseSequence:    int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		RecordCount:     int32(binary.BigEndian.Uint32(b[offRecordCount:])),
	}
	if h.Magic != Magic {
		return h, ErrMagic
	}
	if h.BatchLength < HeaderSize-LogOverhead {
		return h, ErrLength
	}
	return h, nil
}

// Check parses and fully validates the one batch that b must hold exactly: length,
// magic, recordCount against lastOffsetDelta (at most one record per offset the
// batch spans: a compacted batch may hold fewer, a produced one must be Dense),
// and the CRC32C over bytes 21..end.
func Check(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Size() != int64(len(b)) {
		return h, fmt.Errorf("%w: batchLength %d, %d bytes", ErrLength, h.BatchLength, len(b)-LogOverhead)
	}
	if h.RecordCount < 0 || h.LastOffsetDelta < 0 || h.RecordCount > h.LastOffsetDelta+1 {
		return h, fmt.Errorf("%w: lastOffsetDelta %d, recordCount %d", ErrRecordCount, h.LastOffsetDelta, h.RecordCount)
	}
	if crc32.Checksum(b[offAttributes:], castagnoli) != h.CRC {
		return h, ErrCRC
	}
	return h, nil
}

// CRC computes the checksum that a batch's crc field must hold (bytes 21..end).
func CRC(b []byte) uint32 { return crc32.Checksum(b[offAttributes:], castagnoli) }

// SetBaseOffset rewrites the baseOffset field in place.
func SetBaseOffset(b []byte, off int64) { binary.BigEndian.PutUint64(b[0:], uint64(off)) }

// SetLeaderEpoch rewrites the partitionLeaderEpoch field in place.
func SetLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime marks the batch as LogAppendTime and sets maxTimestamp to ts (for
// topics with message.timestamp.type=LogAppendTime); both are covered by the CRC, so
// the CRC is recomputed.
func SetLogAppendTime(b []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | AttrTimestampType
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[offCRC:], CRC(b))
}

// Split walks b, a run of whole batches back to back, and calls fn with each. It
// stops with an error at the first batch that does not pass Check.
func Split(b []byte, fn func(h Header, raw []byte) error) error {
	for len(b) > 0 {
		if len(b) < HeaderSize {
			return ErrShort
		}
		n := int64(int32(binary.BigEndian.Uint32(b[offBatchLength:]))) + LogOverhead
		if n < HeaderSize || n > int64(len(b)) {
			return fmt.Errorf("%w: batchLength %d, %d bytes left", ErrLength, n-LogOverhead, len(b))
		}
		h, err := Check(b[:n])
		if err != nil {
			return err
		}
		if err := fn(h, b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
