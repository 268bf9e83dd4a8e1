package offsets

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// SegmentMeta is the metadata of one log segment. It is an alias of an unnamed
// struct type identical to logstore.SegmentMeta, so that LogIndex satisfies
// logstore.Index without this package importing logstore (or the reverse).
type SegmentMeta = struct {
	BaseOffset   int64
	Size         int64
	NextOffset   int64
	MaxTimestamp int64
	Closed       bool
}

// IndexEntry is one sparse index entry; identical to logstore.IndexEntry.
type IndexEntry = struct {
	Offset             int64
	Pos                int64
	MaxTimestampBefore int64
}

// Value sizes; part of the format.
const (
	segmentValueSize = 25 // size, next offset, max timestamp (8 each), flags (1)
	entryValueSize   = 16 // offset entry: pos, max timestamp before; time entry: offset, pos
	flagClosed       = 0x01
)

// LogIndex is the Pebble-backed index of one partition log; it implements
// logstore.Index (see that interface for the contract). Writes use NoSync except
// SetRecoveryPoint(_, true) and Delete. Lookups create one Pebble iterator each.
type LogIndex struct {
	db     *DB
	prefix []byte // tagLogIndex | partition key | 0x00
	err    error  // invalid partition key
}

// LogIndex returns the index of the partition whose directory is named
// partitionKey (for example "orders-3"). The key must be non-empty and contain no
// zero byte; otherwise every method returns ErrPartitionKey.
func (d *DB) LogIndex(partitionKey string) *LogIndex {
	p, err := partitionPrefix(tagLogIndex, partitionKey)
	return &LogIndex{db: d, prefix: p, err: err}
}

func (x *LogIndex) sub(s byte) []byte {
	k := make([]byte, len(x.prefix)+1, len(x.prefix)+1+16)
	copy(k, x.prefix)
	k[len(x.prefix)] = s
	return k
}

func (x *LogIndex) stateKey(field byte) []byte { return append(x.sub(subState), field) }

func (x *LogIndex) segKey(base int64) []byte { return key(x.sub(subSegment), uint64(base)) }

func (x *LogIndex) offsetSeg(seg int64) []byte { return key(x.sub(subOffset), uint64(seg)) }

func (x *LogIndex) timeSeg(seg int64) []byte { return key(x.sub(subTime), uint64(seg)) }

func (x *LogIndex) with(fn func(db *pebble.DB) error) error {
	if x.err != nil {
		return x.err
	}
	return x.db.with(fn)
}

// Segments returns the metadata of every recorded segment, by base offset.
func (x *LogIndex) Segments() ([]SegmentMeta, error) {
	var out []SegmentMeta
	err := x.with(func(db *pebble.DB) error {
		lo := x.sub(subSegment)
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
		if err != nil {
			return err
		}
		for valid := it.First(); valid; valid = it.Next() {
			k, v := it.Key(), it.Value()
			if len(k) != len(lo)+8 || len(v) != segmentValueSize {
				return errors.Join(fmt.Errorf("offsets: bad segment record %x=%x", k, v), it.Close())
			}
			out = append(out, SegmentMeta{
				BaseOffset:   i64(k[len(lo):]),
				Size:         i64(v[0:]),
				NextOffset:   i64(v[8:]),
				MaxTimestamp: i64(v[16:]),
				Closed:       v[24]&flagClosed != 0,
			})
		}
		return errors.Join(it.Error(), it.Close())
	})
	return out, err
}

// PutSegment records the metadata of segment m.BaseOffset.
func (x *LogIndex) PutSegment(m SegmentMeta) error {
	return x.with(func(db *pebble.DB) error {
		v := make([]byte, 0, segmentValueSize)
		v = appendU64(v, uint64(m.Size))
		v = appendU64(v, uint64(m.NextOffset))
		v = appendU64(v, uint64(m.MaxTimestamp))
		var flags byte
		if m.Closed {
			flags |= flagClosed
		}
		v = append(v, flags)
		return db.Set(x.segKey(m.BaseOffset), v, pebble.NoSync)
	})
}

// DeleteSegment removes the metadata and the entries of one segment.
func (x *LogIndex) DeleteSegment(base int64) error {
	return x.with(func(db *pebble.DB) error {
		b := db.NewBatch()
		defer b.Close()
		o, t := x.offsetSeg(base), x.timeSeg(base)
		err := errors.Join(
			b.Delete(x.segKey(base), nil),
			b.DeleteRange(o, prefixEnd(o), nil),
			b.DeleteRange(t, prefixEnd(t), nil),
		)
		if err != nil {
			return err
		}
		return b.Commit(pebble.NoSync)
	})
}

// PutEntry records e in the offset index and the time index of segment segBase:
// one Pebble batch of two Sets.
func (x *LogIndex) PutEntry(segBase int64, e IndexEntry) error {
	return x.with(func(db *pebble.DB) error {
		b := db.NewBatch()
		defer b.Close()
		var ov, tv [entryValueSize]byte
		binary.BigEndian.PutUint64(ov[0:], uint64(e.Pos))
		binary.BigEndian.PutUint64(ov[8:], uint64(e.MaxTimestampBefore))
		binary.BigEndian.PutUint64(tv[0:], uint64(e.Offset))
		binary.BigEndian.PutUint64(tv[8:], uint64(e.Pos))
		err := errors.Join(
			b.Set(key(x.offsetSeg(segBase), uint64(e.Offset)), ov[:], nil),
			b.Set(key(x.timeSeg(segBase), orderedTs(e.MaxTimestampBefore)), tv[:], nil),
		)
		if err != nil {
			return err
		}
		return b.Commit(pebble.NoSync)
	})
}

// seekLast positions a new iterator over the keys with prefix lo at the last key
// below limit (or the last key at all if limit is nil) and calls fn with its key
// suffix and value if there is one.
func seekLast(db *pebble.DB, lo, limit []byte, fn func(suffix, v []byte) error) (bool, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return false, err
	}
	var valid bool
	if limit == nil {
		valid = it.Last()
	} else {
		valid = it.SeekLT(limit)
	}
	if valid {
		err = fn(it.Key()[len(lo):], it.Value())
	}
	return valid && err == nil, errors.Join(err, it.Error(), it.Close())
}

// LookupOffset returns the entry of segment segBase with the largest offset <= offset.
func (x *LogIndex) LookupOffset(segBase, offset int64) (IndexEntry, bool, error) {
	var e IndexEntry
	var ok bool
	if offset < 0 {
		return e, false, x.err
	}
	err := x.with(func(db *pebble.DB) error {
		lo := x.offsetSeg(segBase)
		var err error
		ok, err = seekLast(db, lo, key(lo, uint64(offset)+1), func(k, v []byte) error {
			if len(k) != 8 || len(v) != entryValueSize {
				return fmt.Errorf("offsets: bad offset entry %x=%x", k, v)
			}
			e = IndexEntry{Offset: i64(k), Pos: i64(v), MaxTimestampBefore: i64(v[8:])}
			return nil
		})
		return err
	})
	return e, ok, err
}

// LookupTimestamp returns the time entry of segment segBase with the largest
// MaxTimestampBefore < ts.
func (x *LogIndex) LookupTimestamp(segBase, ts int64) (IndexEntry, bool, error) {
	var e IndexEntry
	var ok bool
	err := x.with(func(db *pebble.DB) error {
		lo := x.timeSeg(segBase)
		var err error
		ok, err = seekLast(db, lo, key(lo, orderedTs(ts)), func(k, v []byte) error {
			if len(k) != 8 || len(v) != entryValueSize {
				return fmt.Errorf("offsets: bad time entry %x=%x", k, v)
			}
			e = IndexEntry{Offset: i64(v), Pos: i64(v[8:]), MaxTimestampBefore: int64(binary.BigEndian.Uint64(k) ^ 1<<63)}
			return nil
		})
		return err
	})
	return e, ok, err
}

// TruncateEntries removes the entries of segment segBase with Offset >= offset:
// a range deletion in the offset index and, since time entries are ordered by
// offset too, a walk back from the last time entry.
func (x *LogIndex) TruncateEntries(segBase, offset int64) error {
	return x.with(func(db *pebble.DB) error {
		b := db.NewBatch()
		defer b.Close()
		o := x.offsetSeg(segBase)
		if err := b.DeleteRange(key(o, uint64(max(offset, 0))), prefixEnd(o), nil); err != nil {
			return err
		}
		t := x.timeSeg(segBase)
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: t, UpperBound: prefixEnd(t)})
		if err != nil {
			return err
		}
		for valid := it.Last(); valid; valid = it.Prev() {
			v := it.Value()
			if len(v) == entryValueSize && i64(v) < offset {
				break
			}
			if err := b.Delete(it.Key(), nil); err != nil {
				return errors.Join(err, it.Close())
			}
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return err
		}
		return b.Commit(pebble.NoSync)
	})
}

func (x *LogIndex) getState(field byte) (int64, error) {
	var out int64
	err := x.with(func(db *pebble.DB) (err error) {
		out, err = getI64(db, x.stateKey(field), "state value")
		return err
	})
	return out, err
}

func (x *LogIndex) setState(field byte, v int64, opts *pebble.WriteOptions) error {
	return x.with(func(db *pebble.DB) error {
		return db.Set(x.stateKey(field), appendU64(nil, uint64(v)), opts)
	})
}

// RecoveryPoint returns the recorded recovery point, 0 if none.
func (x *LogIndex) RecoveryPoint() (int64, error) { return x.getState(fieldRecoveryPoint) }

// SetRecoveryPoint records the recovery point; durable makes it an fsynced write.
func (x *LogIndex) SetRecoveryPoint(offset int64, durable bool) error {
	opts := pebble.NoSync
	if durable {
		opts = pebble.Sync
	}
	return x.setState(fieldRecoveryPoint, offset, opts)
}

// LogStartOffset returns the recorded log start offset, 0 if none.
func (x *LogIndex) LogStartOffset() (int64, error) { return x.getState(fieldLogStart) }

// SetLogStartOffset records the log start offset; durable makes it an fsynced
// write.
func (x *LogIndex) SetLogStartOffset(offset int64, durable bool) error {
	opts := pebble.NoSync
	if durable {
		opts = pebble.Sync
	}
	return x.setState(fieldLogStart, offset, opts)
}

// CleanerPoint returns the recorded cleaner point (the log cleaner's first dirty
// offset), 0 if none.
func (x *LogIndex) CleanerPoint() (int64, error) { return x.getState(fieldCleanerPoint) }

// SetCleanerPoint records the cleaner point (no fsync).
func (x *LogIndex) SetCleanerPoint(offset int64) error {
	return x.setState(fieldCleanerPoint, offset, pebble.NoSync)
}

// HighWatermark returns the last checkpointed high watermark of the partition
// replica (ok=false when none was recorded). It is a lower bound of the real one:
// checkpoints are written without fsync, and a lost one only makes a restarted
// replica more careful.
func (x *LogIndex) HighWatermark() (hw int64, ok bool, err error) {
	err = x.with(func(db *pebble.DB) error {
		v, closer, err := db.Get(x.stateKey(fieldHighWatermark))
		if errors.Is(err, pebble.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		defer closer.Close()
		if len(v) != 8 {
			return fmt.Errorf("offsets: bad high watermark value %x", v)
		}
		hw, ok = i64(v), true
		return nil
	})
	return hw, ok, err
}

// SetHighWatermark checkpoints the high watermark (no fsync).
func (x *LogIndex) SetHighWatermark(hw int64) error {
	return x.setState(fieldHighWatermark, hw, pebble.NoSync)
}

// Delete removes everything recorded for the partition, its producer state
// included, durably (a partition created again under the same name must not
// inherit its log start offset or its producers). When nothing is recorded (a new
// partition's log resets its index) it writes nothing: every range deletion in
// Pebble's memtable is fragmented again by each iterator made after it, so one
// per new partition made creating thousands of partitions cost the square of
// their number, and its WAL fsync was one more per partition.
func (x *LogIndex) Delete() error {
	return x.with(func(db *pebble.DB) error {
		ap, pk := x.abortedPrefix(), x.producerKey()
		recorded := false
		for _, r := range [][2][]byte{{x.prefix, prefixEnd(x.prefix)}, {ap, prefixEnd(ap)}, {pk, append(x.producerKey(), 0)}} {
			found, err := anyKey(db, r[0], r[1])
			if err != nil {
				return err
			}
			recorded = recorded || found
		}
		if !recorded {
			return nil
		}
		b := db.NewBatch()
		defer b.Close()
		err := errors.Join(
			b.DeleteRange(x.prefix, prefixEnd(x.prefix), nil),
			b.Delete(pk, nil),
			b.DeleteRange(ap, prefixEnd(ap), nil),
		)
		if err != nil {
			return err
		}
		return b.Commit(pebble.Sync)
	})
}

// anyKey reports whether db holds a key in [lo, hi).
func anyKey(db *pebble.DB, lo, hi []byte) (bool, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return false, err
	}
	found := it.First()
	return found, it.Close()
}
