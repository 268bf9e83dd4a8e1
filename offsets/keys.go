package offsets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// Keyspace tags: the first byte of every key. Values are part of the on-disk
// format (docs/format/meta-index.md) and must not change meaning.
const (
	tagFormat   = 0x01 // the format version key
	tagLogIndex = 0x02 // per-partition log index

	tagGroupOffsets  = 0x03 // committed group offsets, per __consumer_offsets partition
	tagGroupMeta     = 0x04 // group metadata, per __consumer_offsets partition
	tagProducerState = 0x05 // producer-state snapshot, per partition
	tagGroupApplied  = 0x06 // how far each __consumer_offsets partition is applied
	tagGroupRecords  = 0x07 // KIP-848 consumer group records, per __consumer_offsets partition
	tagGroupPending  = 0x08 // offsets of open transactions, per __consumer_offsets partition
	tagTxnState      = 0x09 // transaction coordinator state, per __transaction_state partition
	tagAbortedTxns   = 0x0a // aborted transactions, per partition
)

// Sub-keyspaces of a partition's log index (the byte after the partition key).
const (
	subState   = 0x01 // partition state fields
	subSegment = 0x02 // segment metadata
	subOffset  = 0x03 // sparse offset index
	subTime    = 0x04 // time index
)

// Partition state fields (the byte after subState).
const (
	fieldLogStart      = 0x01
	fieldRecoveryPoint = 0x02
	fieldHighWatermark = 0x03 // replication's high-watermark checkpoint
	fieldCleanerPoint  = 0x04 // the log cleaner's first dirty offset
)

var formatKey = []byte{tagFormat}

// ErrPartitionKey: a partition key is empty or contains a zero byte.
var ErrPartitionKey = errors.New("offsets: invalid partition key")

// partitionPrefix returns tag | key | 0x00. The zero terminator keeps prefixes of
// different partitions disjoint ("t-1" and "t-10").
func partitionPrefix(tag byte, key string) ([]byte, error) {
	if key == "" || strings.IndexByte(key, 0) >= 0 {
		return nil, ErrPartitionKey
	}
	p := make([]byte, 0, len(key)+2+17)
	p = append(p, tag)
	p = append(p, key...)
	return append(p, 0), nil
}

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil // all 0xff: no upper bound
}

func appendU64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

// orderedTs maps a signed timestamp to an unsigned one with the same order.
func orderedTs(ts int64) uint64 { return uint64(ts) ^ 1<<63 }

func key(prefix []byte, parts ...uint64) []byte {
	k := make([]byte, len(prefix), len(prefix)+8*len(parts))
	copy(k, prefix)
	for _, p := range parts {
		k = appendU64(k, p)
	}
	return k
}

func i64(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }

// getI64 reads the int64 value of key; 0 when there is none. what names the
// value in errors.
func getI64(db *pebble.DB, key []byte, what string) (int64, error) {
	v, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("offsets: bad %s %x", what, v)
	}
	return i64(v), nil
}

// scanPrefix calls fn with every key under prefix lo (without lo) and its value,
// in key order; the slices are valid during the call only.
func (d *DB) scanPrefix(lo []byte, fn func(key, value []byte) error) error {
	return d.with(func(db *pebble.DB) error {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
		if err != nil {
			return err
		}
		for valid := it.First(); valid; valid = it.Next() {
			if err := fn(it.Key()[len(lo):], it.Value()); err != nil {
				return errors.Join(err, it.Close())
			}
		}
		return errors.Join(it.Error(), it.Close())
	})
}
