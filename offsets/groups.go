package offsets

// The group coordinator's keyspaces: committed offsets (tag 0x03), group metadata
// (tag 0x04) and, per __consumer_offsets partition, the offset up to which the log
// has been applied (tag 0x06). They are an index of the __consumer_offsets log,
// rebuilt from it (see docs/format/meta-index.md and docs/format/offsets.md).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"
)

// GroupOffset is one committed offset of a consumer group.
type GroupOffset struct {
	Group     string
	Topic     string
	Partition int32

	Offset      int64
	LeaderEpoch int32 // -1 if the client gave none
	Metadata    string
	// CommitTimestamp is when the commit was made (Unix ms).
	CommitTimestamp int64
	// WrittenAt is the timestamp (Unix ms) of the log batch that last wrote this
	// commit: the coordinator rewrites commits before log retention could delete
	// their only copy.
	WrittenAt int64
}

// ErrGroupKey: a group or topic name does not fit the key layout (longer than
// 32767 bytes, Kafka's string limit).
var ErrGroupKey = errors.New("offsets: group or topic name too long")

// Fixed part of a group offset value: offset, leader epoch, commit timestamp, written at.
const groupOffsetValueFixed = 8 + 4 + 8 + 8

// GroupShard is the group keyspaces of one __consumer_offsets partition. Reads see
// every applied GroupBatch; it is safe for concurrent use.
type GroupShard struct {
	db        *DB
	partition int32
}

// GroupShard returns the keyspaces of __consumer_offsets partition p.
func (d *DB) GroupShard(p int32) *GroupShard { return &GroupShard{db: d, partition: p} }

func (s *GroupShard) prefix(tag byte) []byte {
	return binary.BigEndian.AppendUint32([]byte{tag}, uint32(s.partition))
}

func appendName(b []byte, name string) ([]byte, error) {
	if len(name) > math.MaxInt16 {
		return nil, ErrGroupKey
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(name)))
	return append(b, name...), nil
}

func (s *GroupShard) groupOffsetsPrefix(group string) ([]byte, error) {
	return appendName(s.prefix(tagGroupOffsets), group)
}

func (s *GroupShard) offsetKey(group, topic string, partition int32) ([]byte, error) {
	k, err := s.groupOffsetsPrefix(group)
	if err != nil {
		return nil, err
	}
	if k, err = appendName(k, topic); err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint32(k, uint32(partition)), nil
}

func (s *GroupShard) metaKey(group string) []byte { return append(s.prefix(tagGroupMeta), group...) }

// parseOffsetKey splits a group offset key (without checking the tag and partition).
func parseOffsetKey(k []byte) (group, topic string, partition int32, err error) {
	k = k[5:]
	next := func() (string, bool) {
		if len(k) < 2 {
			return "", false
		}
		n := int(binary.BigEndian.Uint16(k))
		if len(k) < 2+n {
			return "", false
		}
		v := string(k[2 : 2+n])
		k = k[2+n:]
		return v, true
	}
	g, ok1 := next()
	t, ok2 := next()
	if !ok1 || !ok2 || len(k) != 4 {
		return "", "", 0, fmt.Errorf("offsets: bad group offset key %x", k)
	}
	return g, t, int32(binary.BigEndian.Uint32(k)), nil
}

func encodeGroupOffset(o GroupOffset) []byte {
	v := make([]byte, 0, groupOffsetValueFixed+len(o.Metadata))
	v = binary.BigEndian.AppendUint64(v, uint64(o.Offset))
	v = binary.BigEndian.AppendUint32(v, uint32(o.LeaderEpoch))
	v = binary.BigEndian.AppendUint64(v, uint64(o.CommitTimestamp))
	v = binary.BigEndian.AppendUint64(v, uint64(o.WrittenAt))
	return append(v, o.Metadata...)
}

func decodeGroupOffset(k, v []byte) (GroupOffset, error) {
	var o GroupOffset
	var err error
	if o.Group, o.Topic, o.Partition, err = parseOffsetKey(k); err != nil {
		return o, err
	}
	if len(v) < groupOffsetValueFixed {
		return o, fmt.Errorf("offsets: bad group offset value %x", v)
	}
	o.Offset = i64(v)
	o.LeaderEpoch = int32(binary.BigEndian.Uint32(v[8:]))
	o.CommitTimestamp = i64(v[12:])
	o.WrittenAt = i64(v[20:])
	o.Metadata = string(v[groupOffsetValueFixed:])
	return o, nil
}

// Applied returns the offset of __consumer_offsets up to which (excluding) the log
// has been applied, 0 if none.
func (s *GroupShard) Applied() (int64, error) {
	var out int64
	err := s.db.with(func(db *pebble.DB) (err error) {
		out, err = getI64(db, s.prefix(tagGroupApplied), "applied offset")
		return err
	})
	return out, err
}

// Offset returns one committed offset; ok is false if there is none.
func (s *GroupShard) Offset(group, topic string, partition int32) (o GroupOffset, ok bool, err error) {
	k, err := s.offsetKey(group, topic, partition)
	if err != nil {
		return o, false, err
	}
	err = s.db.with(func(db *pebble.DB) error {
		v, closer, err := db.Get(k)
		if errors.Is(err, pebble.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		defer closer.Close()
		o, err = decodeGroupOffset(k, v)
		ok = err == nil
		return err
	})
	return o, ok, err
}

// GroupOffsets calls fn with every committed offset of group, by topic (in key
// order: name length, then bytes) and partition.
func (s *GroupShard) GroupOffsets(group string, fn func(GroupOffset) error) error {
	p, err := s.groupOffsetsPrefix(group)
	if err != nil {
		return err
	}
	return s.scanOffsets(p, fn)
}

// Offsets calls fn with every committed offset of every group of the partition.
func (s *GroupShard) Offsets(fn func(GroupOffset) error) error {
	return s.scanOffsets(s.prefix(tagGroupOffsets), fn)
}

func (s *GroupShard) scanOffsets(lo []byte, fn func(GroupOffset) error) error {
	return s.db.with(func(db *pebble.DB) error {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
		if err != nil {
			return err
		}
		for valid := it.First(); valid; valid = it.Next() {
			o, err := decodeGroupOffset(it.Key(), it.Value())
			if err == nil {
				err = fn(o)
			}
			if err != nil {
				return errors.Join(err, it.Close())
			}
		}
		return errors.Join(it.Error(), it.Close())
	})
}

// Groups calls fn with the stored metadata of every group of the partition that has
// some: the value of its latest group metadata record in the log (Kafka's
// GroupMetadataValue bytes; the slice is only valid during the call) and the
// timestamp of the batch that wrote it.
func (s *GroupShard) Groups(fn func(group string, value []byte, writtenAt int64) error) error {
	lo := s.prefix(tagGroupMeta)
	return s.db.with(func(db *pebble.DB) error {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
		if err != nil {
			return err
		}
		for valid := it.First(); valid; valid = it.Next() {
			v := it.Value()
			if len(v) < 8 {
				return errors.Join(fmt.Errorf("offsets: bad group metadata value %x", v), it.Close())
			}
			if err := fn(string(it.Key()[len(lo):]), v[8:], i64(v)); err != nil {
				return errors.Join(err, it.Close())
			}
		}
		return errors.Join(it.Error(), it.Close())
	})
}

// GroupBatch collects changes to a GroupShard, written atomically by Commit
// together with the new applied offset.
type GroupBatch struct {
	s   *GroupShard
	ops []groupOp
	err error
	// pending holds the pending offsets set by this batch, by producer id; ended
	// the producers whose pending offsets in Pebble an EndTxn of this batch took.
	pending map[int64][]GroupOffset
	ended   map[int64]bool
}

type groupOp struct {
	key, value []byte // value nil: delete
}

// NewBatch starts a batch of changes.
func (s *GroupShard) NewBatch() *GroupBatch { return &GroupBatch{s: s} }

// Len is the number of changes in the batch.
func (b *GroupBatch) Len() int { return len(b.ops) }

// SetOffset records a committed offset.
func (b *GroupBatch) SetOffset(o GroupOffset) {
	k, err := b.s.offsetKey(o.Group, o.Topic, o.Partition)
	if err != nil {
		b.err = errors.Join(b.err, err)
		return
	}
	b.ops = append(b.ops, groupOp{k, encodeGroupOffset(o)})
}

// DeleteOffset removes a committed offset.
func (b *GroupBatch) DeleteOffset(group, topic string, partition int32) {
	k, err := b.s.offsetKey(group, topic, partition)
	if err != nil {
		b.err = errors.Join(b.err, err)
		return
	}
	b.ops = append(b.ops, groupOp{k, nil})
}

// SetGroup records a group's metadata (the record value as in the log).
func (b *GroupBatch) SetGroup(group string, value []byte, writtenAt int64) {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(value)), uint64(writtenAt))
	b.ops = append(b.ops, groupOp{b.s.metaKey(group), append(v, value...)})
}

// DeleteGroup removes a group's metadata (not its offsets).
func (b *GroupBatch) DeleteGroup(group string) {
	b.ops = append(b.ops, groupOp{b.s.metaKey(group), nil})
}

// Commit writes the changes and the applied offset in one Pebble batch, without
// fsync: the log is the source of truth, and a lost write is applied again from
// it because the applied offset is lost with it.
func (b *GroupBatch) Commit(applied int64) error {
	if b.err != nil {
		return b.err
	}
	return b.s.db.with(func(db *pebble.DB) error {
		pb := db.NewBatch()
		defer pb.Close()
		for _, op := range b.ops {
			var err error
			if op.value == nil {
				err = pb.Delete(op.key, nil)
			} else {
				err = pb.Set(op.key, op.value, nil)
			}
			if err != nil {
				return err
			}
		}
		if err := pb.Set(b.s.prefix(tagGroupApplied), appendU64(nil, uint64(applied)), nil); err != nil {
			return err
		}
		return pb.Commit(pebble.NoSync)
	})
}

// GroupRecords calls fn with every stored KIP-848 group record of the partition: the
// record's key and value as in the log (the slices are only valid during the call),
// in key order, so a group's records are together.
func (s *GroupShard) GroupRecords(fn func(key, value []byte) error) error {
	return s.db.scanPrefix(s.prefix(tagGroupRecords), fn)
}

// SetGroupRecord stores a KIP-848 group record under its log key; a nil value
// deletes it (a tombstone in the log).
func (b *GroupBatch) SetGroupRecord(key, value []byte) {
	k := append(b.s.prefix(tagGroupRecords), key...)
	if value != nil {
		value = append([]byte{}, value...)
	}
	b.ops = append(b.ops, groupOp{k, value})
}
