package offsets

// Offsets committed inside a transaction (TxnOffsetCommit, KIP-98/447): pending
// until the transaction's marker reaches their __consumer_offsets partition, then
// committed (a commit marker) or dropped (an abort marker). They live in Pebble
// under tag 0x08, like the committed ones, so that a transaction open across a
// restart of the applier keeps them (docs/format/meta-index.md):
//
//	0x08 | partition u32 | producer id u64 | group (u16 len + bytes) |
//	topic (u16 len + bytes) | partition u32  ->  the committed-offset value

import (
	"encoding/binary"
	"errors"

	"github.com/cockroachdb/pebble/v2"
)

func (s *GroupShard) pendingPrefix(pid int64) []byte {
	return binary.BigEndian.AppendUint64(s.prefix(tagGroupPending), uint64(pid))
}

// pendingKey is the pending offset key of o in producer pid's transaction.
func (s *GroupShard) pendingKey(pid int64, o GroupOffset) ([]byte, error) {
	k, err := appendName(s.pendingPrefix(pid), o.Group)
	if err != nil {
		return nil, err
	}
	if k, err = appendName(k, o.Topic); err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint32(k, uint32(o.Partition)), nil
}

// scanPending calls fn with every pending offset under prefix lo, with its
// producer id.
func (s *GroupShard) scanPending(lo []byte, fn func(pid int64, o GroupOffset) error) error {
	return s.db.with(func(db *pebble.DB) error {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
		if err != nil {
			return err
		}
		for valid := it.First(); valid; valid = it.Next() {
			k := it.Key()
			if len(k) < 13 {
				return errors.Join(errors.New("offsets: bad pending offset key"), it.Close())
			}
			pid := i64(k[5:])
			// decodeGroupOffset skips the tag and partition (5 bytes): drop the pid.
			o, err := decodeGroupOffset(append(append([]byte(nil), k[:5]...), k[13:]...), it.Value())
			if err == nil {
				err = fn(pid, o)
			}
			if err != nil {
				return errors.Join(err, it.Close())
			}
		}
		return errors.Join(it.Error(), it.Close())
	})
}

// Pending reports whether a transaction holds a pending offset of group for
// topic-partition (OffsetFetch's require_stable answers UNSTABLE_OFFSET_COMMIT).
func (s *GroupShard) Pending(group, topic string, partition int32) (bool, error) {
	found := false
	err := s.scanPending(s.prefix(tagGroupPending), func(_ int64, o GroupOffset) error {
		if o.Group == group && o.Topic == topic && o.Partition == partition {
			found = true
		}
		return nil
	})
	return found, err
}

// GroupPending reports whether a transaction holds a pending offset of group.
func (s *GroupShard) GroupPending(group string) (bool, error) {
	found := false
	err := s.scanPending(s.prefix(tagGroupPending), func(_ int64, o GroupOffset) error {
		found = found || o.Group == group
		return nil
	})
	return found, err
}

// SetPendingOffset records an offset committed in producer pid's open transaction.
func (b *GroupBatch) SetPendingOffset(pid int64, o GroupOffset) {
	k, err := b.s.pendingKey(pid, o)
	if err != nil {
		b.err = errors.Join(b.err, err)
		return
	}
	b.ops = append(b.ops, groupOp{k, encodeGroupOffset(o)})
	if b.pending == nil {
		b.pending = make(map[int64][]GroupOffset)
	}
	b.pending[pid] = append(b.pending[pid], o)
}

// EndTxn commits (commit set) or drops the pending offsets of producer pid's
// transaction, those in Pebble and those of this batch.
func (b *GroupBatch) EndTxn(pid int64, commit bool) {
	var os []GroupOffset
	if !b.ended[pid] { // else Pebble's were taken by an earlier marker of this batch
		err := b.s.scanPending(b.s.pendingPrefix(pid), func(_ int64, o GroupOffset) error {
			os = append(os, o)
			return nil
		})
		if err != nil {
			b.err = errors.Join(b.err, err)
			return
		}
		if b.ended == nil {
			b.ended = make(map[int64]bool)
		}
		b.ended[pid] = true
	}
	os = append(os, b.pending[pid]...)
	delete(b.pending, pid)
	for _, o := range os {
		k, err := b.s.pendingKey(pid, o)
		if err != nil {
			b.err = errors.Join(b.err, err)
			continue
		}
		b.ops = append(b.ops, groupOp{k, nil})
		if commit {
			b.SetOffset(o)
		}
	}
}
