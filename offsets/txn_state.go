package offsets

// The transaction coordinator's keyspace (tag 0x09): per __transaction_state
// partition, the latest record of each transactional id, as in the log, and the
// offset up to which the log has been applied. It is an index of the log, kept by
// every replica as records are committed, so that an elected coordinator applies
// only what came after (docs/format/meta-index.md):
//
//	0x09 | partition u32 | 0x01                -> applied i64
//	0x09 | partition u32 | 0x02 | record key   -> record value (TransactionLogValue)

import (
	"encoding/binary"

	"github.com/cockroachdb/pebble/v2"
)

const (
	txnApplied = 0x01
	txnRecord  = 0x02
)

// TxnShard is the transaction state of one __transaction_state partition. It is
// safe for concurrent use; callers serialize their Applies.
type TxnShard struct {
	db        *DB
	partition int32
}

// TxnShard returns the keyspace of __transaction_state partition p.
func (d *DB) TxnShard(p int32) *TxnShard { return &TxnShard{db: d, partition: p} }

func (s *TxnShard) prefix() []byte {
	return binary.BigEndian.AppendUint32([]byte{tagTxnState}, uint32(s.partition))
}

// TxnChange is the latest record of one transactional id: its key as in the log,
// and its value (nil: a tombstone, the id is forgotten).
type TxnChange struct {
	Key, Value []byte
}

// Applied returns the offset up to which (excluding) the log has been applied, 0
// if none.
func (s *TxnShard) Applied() (int64, error) {
	var out int64
	err := s.db.with(func(db *pebble.DB) (err error) {
		out, err = getI64(db, append(s.prefix(), txnApplied), "transaction state applied offset")
		return err
	})
	return out, err
}

// Apply writes changes and the applied offset in one Pebble batch, without
// fsync (the log is the truth: a lost write is applied again from it, as its
// applied offset is lost with it). With reset, the partition's state is
// dropped first (the log was applied from its start again).
func (s *TxnShard) Apply(reset bool, changes []TxnChange, applied int64) error {
	p := s.prefix()
	return s.db.with(func(db *pebble.DB) error {
		b := db.NewBatch()
		defer b.Close()
		if reset {
			if err := b.DeleteRange(p, prefixEnd(p), nil); err != nil {
				return err
			}
		}
		for _, c := range changes {
			k := append(append(append([]byte(nil), p...), txnRecord), c.Key...)
			var err error
			if c.Value == nil {
				err = b.Delete(k, nil)
			} else {
				err = b.Set(k, c.Value, nil)
			}
			if err != nil {
				return err
			}
		}
		if err := b.Set(append(p, txnApplied), appendU64(nil, uint64(applied)), nil); err != nil {
			return err
		}
		return b.Commit(pebble.NoSync)
	})
}

// States calls fn with the latest record of every transactional id of the
// partition (the slices are valid during the call only).
func (s *TxnShard) States(fn func(key, value []byte) error) error {
	return s.db.scanPrefix(append(s.prefix(), txnRecord), fn)
}
