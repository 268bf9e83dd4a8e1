package offsets

// A partition's idempotent producer state and aborted transactions (tags 0x05 and
// 0x0a): both are derived from the partition's log, kept here so that opening the
// partition reads the log only after the latest snapshot
// (docs/format/meta-index.md):
//
//	0x05 | <partition key> 0x00                   -> snapshot offset i64 | snapshot
//	0x0a | <partition key> 0x00 | last offset u64 -> producer id i64 | first offset i64 |
//	                                                 last stable offset i64

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// AbortedTxnRecord is one aborted transaction of a partition: its producer, the
// offset of its first record, the offset of its abort marker and the partition's
// last stable offset once the marker was appended (Kafka's .txnindex entry). It
// is an alias of an unnamed struct so that callers need not import this package.
type AbortedTxnRecord = struct {
	ProducerID, FirstOffset, LastOffset, LastStableOffset int64
}

// ProducerStateUpdate is one atomic change of a partition's producer state
// keyspaces: Drop first, then Aborted, then the snapshot. An alias of an unnamed
// struct, as AbortedTxnRecord.
type ProducerStateUpdate = struct {
	// Drop lists ranges [lo, hi) of marker offsets whose aborted transactions
	// are deleted.
	Drop [][2]int64
	// Aborted are aborted transactions to record.
	Aborted []AbortedTxnRecord
	// SetSnapshot replaces the snapshot with Snapshot taken at SnapshotOffset;
	// DeleteSnapshot deletes it.
	SetSnapshot, DeleteSnapshot bool
	SnapshotOffset              int64
	Snapshot                    []byte
	// Sync makes the batch durable before the call returns.
	Sync bool
}

const abortedValueSize = 24

func (x *LogIndex) producerKey() []byte {
	return append([]byte{tagProducerState}, x.prefix[1:]...)
}

func (x *LogIndex) abortedPrefix() []byte {
	return append([]byte{tagAbortedTxns}, x.prefix[1:]...)
}

// ProducerSnapshot returns the partition's producer-state snapshot and the offset
// it was taken at (ok false: none).
func (x *LogIndex) ProducerSnapshot() (offset int64, snapshot []byte, ok bool, err error) {
	err = x.with(func(db *pebble.DB) error {
		v, closer, err := db.Get(x.producerKey())
		if errors.Is(err, pebble.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		defer closer.Close()
		if len(v) < 8 {
			return fmt.Errorf("offsets: bad producer snapshot value of %d bytes", len(v))
		}
		offset, snapshot, ok = i64(v), append([]byte(nil), v[8:]...), true
		return nil
	})
	return offset, snapshot, ok, err
}

// AbortedTxnRecords calls fn with every recorded aborted transaction of the
// partition, by marker offset.
func (x *LogIndex) AbortedTxnRecords(fn func(AbortedTxnRecord) error) error {
	if x.err != nil {
		return x.err
	}
	return x.db.scanPrefix(x.abortedPrefix(), func(k, v []byte) error {
		if len(k) != 8 || len(v) != abortedValueSize {
			return fmt.Errorf("offsets: bad aborted transaction record %x=%x", k, v)
		}
		return fn(AbortedTxnRecord{ProducerID: i64(v), FirstOffset: i64(v[8:]), LastOffset: i64(k), LastStableOffset: i64(v[16:])})
	})
}

// UpdateProducerState applies u as one Pebble batch.
func (x *LogIndex) UpdateProducerState(u ProducerStateUpdate) error {
	return x.with(func(db *pebble.DB) error {
		b := db.NewBatch()
		defer b.Close()
		ap := x.abortedPrefix()
		var errs []error
		for _, r := range u.Drop {
			if r[0] >= r[1] {
				continue
			}
			lo, hi := key(ap, uint64(max(r[0], 0))), key(ap, uint64(max(r[1], 0)))
			// Only a range that holds a record: every range deletion is
			// fragmented again by each later iterator (see Delete), and every
			// partition open drops one.
			found, err := anyKey(db, lo, hi)
			if err != nil {
				return err
			}
			if found {
				errs = append(errs, b.DeleteRange(lo, hi, nil))
			}
		}
		for _, a := range u.Aborted {
			v := make([]byte, 0, abortedValueSize)
			v = appendU64(appendU64(appendU64(v, uint64(a.ProducerID)), uint64(a.FirstOffset)), uint64(a.LastStableOffset))
			errs = append(errs, b.Set(key(ap, uint64(a.LastOffset)), v, nil))
		}
		switch {
		case u.SetSnapshot:
			v := make([]byte, 0, 8+len(u.Snapshot))
			errs = append(errs, b.Set(x.producerKey(), append(appendU64(v, uint64(u.SnapshotOffset)), u.Snapshot...), nil))
		case u.DeleteSnapshot:
			errs = append(errs, b.Delete(x.producerKey(), nil))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		opts := pebble.NoSync
		if u.Sync {
			opts = pebble.Sync
		}
		return b.Commit(opts)
	})
}
