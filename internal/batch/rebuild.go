package batch

// Writing a batch again with fewer records, as the log cleaner does (Kafka's
// MemoryRecords.filterTo): the header keeps what identifies the batch and its
// producer (baseOffset, lastOffsetDelta, partitionLeaderEpoch, producer id, epoch
// and base sequence, the attributes' codec, timestamp type and flags); the
// records keep their bytes, behind a timestampDelta recomputed from the new
// baseTimestamp; the records are compressed again with the batch's own codec
// and the CRC is computed again.

import (
	"encoding/binary"
	"math"

	"skiff/internal/compress"
)

// A Rebuilder writes batches again from some of their records. It reuses its
// buffers from one batch to the next; the zero Rebuilder is ready to use. It is
// not safe for concurrent use.
type Rebuilder struct {
	raw []byte // uncompressed records
}

// NoHorizon passed to Rebuild leaves the batch without a delete horizon.
const NoHorizon = math.MinInt64

// Rebuild appends to dst the batch h (whose records Records read from bytes
// whose compressed form had format f) holding only recs, which must be records
// of that batch in their order, and returns the result. With horizon !=
// NoHorizon the batch gets the delete horizon flag and baseTimestamp = horizon
// (KIP-534); otherwise baseTimestamp is the first record's timestamp. The
// maxTimestamp is the largest record timestamp, or h's for a LogAppendTime
// batch (Kafka keeps the broker's time). recs must not be empty: see AppendEmpty.
// The records are compressed at their codec library's default level.
func (rb *Rebuilder) Rebuild(dst []byte, h *Header, recs []Record, horizon int64, f compress.Format) ([]byte, error) {
	return rb.rebuild(dst, h, recs, horizon, f, 0, false)
}

// RebuildLevel is Rebuild compressing at level, in Kafka's terms
// (compress.CompressLevel).
func (rb *Rebuilder) RebuildLevel(dst []byte, h *Header, recs []Record, horizon int64, f compress.Format, level int) ([]byte, error) {
	return rb.rebuild(dst, h, recs, horizon, f, level, true)
}

func (rb *Rebuilder) rebuild(dst []byte, h *Header, recs []Record, horizon int64, f compress.Format,
	level int, leveled bool) ([]byte, error) {
	if len(recs) == 0 {
		panic("batch: Rebuild with no records")
	}
	logAppend := h.Attributes&AttrTimestampType != 0
	base := recs[0].Timestamp
	maxTs := h.MaxTimestamp
	if !logAppend {
		maxTs = base
		for _, r := range recs {
			maxTs = max(maxTs, r.Timestamp)
		}
	}
	attrs := h.Attributes &^ AttrDeleteHorizon
	if horizon != NoHorizon {
		base = horizon
		attrs |= AttrDeleteHorizon
	}
	raw := rb.raw[:0]
	for _, r := range recs {
		ts := r.Timestamp - base
		n := 1 + varintLen(ts) + len(r.tail)
		raw = binary.AppendVarint(raw, int64(n))
		raw = append(raw, 0) // attributes, unused
		raw = binary.AppendVarint(raw, ts)
		raw = append(raw, r.tail...)
	}
	rb.raw = raw

	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	var out []byte
	var err error
	if leveled {
		out, err = compress.CompressLevel(h.Codec(), f, level, dst, raw)
	} else {
		out, err = compress.Compress(h.Codec(), f, dst, raw)
	}
	if err != nil {
		return dst[:start], err
	}
	b := out[start:]
	binary.BigEndian.PutUint64(b[0:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-LogOverhead))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(h.LeaderEpoch))
	b[offMagic] = Magic
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(attrs))
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(base))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(maxTs))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(len(recs)))
	binary.BigEndian.PutUint32(b[offCRC:], CRC(b))
	return out, nil
}

// AppendEmpty appends to dst the header-only batch that stands for h once
// compaction removed all its records, and returns the result: same base offset,
// lastOffsetDelta, leader epoch and producer fields (so a producer's last
// sequence survives, and the batch's offsets stay accounted for), no records,
// uncompressed, base and max timestamp h's maxTimestamp (Kafka's
// writeEmptyHeader).
func AppendEmpty(dst []byte, h *Header) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	b := dst[start:]
	attrs := h.Attributes &^ (AttrCompressionMask | AttrDeleteHorizon)
	binary.BigEndian.PutUint64(b[0:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(b[offBatchLength:], HeaderSize-LogOverhead)
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(h.LeaderEpoch))
	b[offMagic] = Magic
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(attrs))
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(b[offRecordCount:], 0)
	binary.BigEndian.PutUint32(b[offCRC:], CRC(b))
	return dst
}

// varintLen is the length of v as a zigzag varint.
func varintLen(v int64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutVarint(buf[:], v)
}
