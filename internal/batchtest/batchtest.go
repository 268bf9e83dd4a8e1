// Package batchtest builds valid RecordBatch v2 bytes for tests, as a producer would
// send them: one record per value (or key and value), CRC32C set, uncompressed or
// compressed with a Kafka codec.
package batchtest

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
	"skiff/internal/compress"
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

// Build returns one batch holding values, one record each without a key, record
// i at timestamp ts+i, with the producer fields of p, uncompressed.
func Build(p Producer, ts int64, values ...[]byte) []byte {
	kvs := make([]KV, len(values))
	for i, v := range values {
		kvs[i].Value = v
	}
	return Keyed(p, ts, compress.None, false, kvs...)
}

// Strings is Build with string values.
func Strings(p Producer, ts int64, values ...string) []byte {
	vs := make([][]byte, len(values))
	for i, v := range values {
		vs[i] = []byte(v)
	}
	return Build(p, ts, vs...)
}

// KV is one keyed record for Keyed; a nil Value is a tombstone.
type KV struct {
	Key, Value []byte
}

// Keyed returns one batch of records with keys, record i at timestamp ts+i,
// with the producer fields of p, its records compressed with codec (snappy in
// the xerial framing of Java clients when xerial is set).
func Keyed(p Producer, ts int64, codec compress.Codec, xerial bool, kvs ...KV) []byte {
	var recs []byte
	for i, kv := range kvs {
		r := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i), Key: kv.Key, Value: kv.Value}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // Length 0 encodes as one varint byte
		recs = r.AppendTo(recs)
	}
	f := compress.Plain
	if xerial {
		f = compress.Xerial
	}
	z, err := compress.Compress(codec, f, nil, recs)
	if err != nil {
		panic(err)
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                batch.Magic,
		Attributes:           int16(codec),
		LastOffsetDelta:      int32(len(kvs) - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts + int64(len(kvs)) - 1,
		ProducerID:           p.ID,
		ProducerEpoch:        p.Epoch,
		FirstSequence:        p.Sequence,
		NumRecords:           int32(len(kvs)),
		Records:              z,
	}
	rb.Length = int32(batch.HeaderSize - batch.LogOverhead + len(z))
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[17:], batch.CRC(b))
	return b
}
