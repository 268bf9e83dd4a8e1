// Package batchtest builds valid RecordBatch v2 bytes for tests, as a producer would
// send them: uncompressed, one record per value, CRC32C set.
package batchtest

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
)

// Producer holds a batch's producer fields. Use
// Plain for a plain producer.
type Producer struct {
	ID       int64
	Epoch    int16
	Sequence int32
}

// Plain is a producer without idempotence (id, epoch and sequence -1).
var Plain = Producer{ID: -1, Epoch: -1, Sequence: -1}

// Build returns one batch holding values, one record each, record i at timestamp
// ts+i, with the producer fields of p.
func Build(p Producer, ts int64, values ...[]byte) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i), Value: v}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // Length 0 encodes as one varint byte
		recs = r.AppendTo(recs)
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                batch.Magic,
		LastOffsetDelta:      int32(len(values) - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts + int64(len(values)) - 1,
		ProducerID:           p.ID,
		ProducerEpoch:        p.Epoch,
		FirstSequence:        p.Sequence,
		NumRecords:           int32(len(values)),
		Records:              recs,
	}
	rb.Length = int32(batch.HeaderSize - batch.LogOverhead + len(recs))
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[17:], batch.CRC(b))
	return b
}

// Strings is Build with string values.
func Strings(p Producer, ts int64, values ...string) []byte {
	vs := make([][]byte, len(values))
	for i, v := range values {
		vs[i] = []byte(v)
	}
	return Build(p, ts, vs...)
}
