package txn

// The materialized state of __transaction_state: every replica of a partition
// here (leader or follower) applies its committed records to a store, in Pebble
// (offsets.TxnShard, tag 0x09) when the node has one, so that an elected
// coordinator applies only the records it has not yet and reads the latest state
// of each transactional id from the store, instead of reading the whole log.

import (
	"bytes"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"skiff/internal/batch"
	"skiff/logstore"
	"skiff/offsets"
)

// stateStore holds the latest record of each transactional id of one partition
// and how far the log was applied (offsets.TxnShard, or memStore).
type stateStore interface {
	Applied() (int64, error)
	Apply(reset bool, changes []offsets.TxnChange, applied int64) error
	States(fn func(key, value []byte) error) error
}

var _ stateStore = (*offsets.TxnShard)(nil)

// memStore is a stateStore in memory, for a coordinator without a DB.
type memStore struct {
	mu      sync.Mutex
	applied int64
	recs    map[string][]byte
}

func (s *memStore) Applied() (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied, nil
}

func (s *memStore) Apply(reset bool, changes []offsets.TxnChange, applied int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if reset || s.recs == nil {
		s.recs = make(map[string][]byte)
	}
	for _, c := range changes {
		if c.Value == nil {
			delete(s.recs, string(c.Key))
		} else {
			s.recs[string(c.Key)] = bytes.Clone(c.Value)
		}
	}
	s.applied = applied
	return nil
}

func (s *memStore) States(fn func(key, value []byte) error) error {
	s.mu.Lock()
	keys := make([]string, 0, len(s.recs))
	for k := range s.recs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		vals[i] = s.recs[k]
	}
	s.mu.Unlock()
	for i, k := range keys {
		if err := fn([]byte(k), vals[i]); err != nil {
			return err
		}
	}
	return nil
}

// committedLog is what applying needs of a replica of a __transaction_state
// partition, whatever its role (a *replication.Partition).
type committedLog interface {
	HighWatermark() int64
	LogStartOffset() int64
	LogEndOffset() int64
	ReadCommitted(offset, maxBytes int64) (*logstore.Slice, error)
}

// storeFor returns the store of partition id and the lock that serializes
// applying to it.
func (c *Coordinator) storeFor(id int32) (stateStore, *sync.Mutex) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.mu.stores[id]
	if st == nil {
		st = &partitionStore{}
		if c.cfg.DB != nil {
			st.store = c.cfg.DB.TxnShard(id)
		} else {
			st.store = &memStore{}
		}
		c.mu.stores[id] = st
	}
	return st.store, &st.mu
}

type partitionStore struct {
	mu    sync.Mutex // held while applying
	store stateStore
}

// apply applies the committed records of partition id's replica log up to (at
// most) to to its store, from where it left off (from the log start again when
// the store is ahead of the log, or behind its start), and returns how far the
// store is applied.
func (c *Coordinator) apply(id int32, log committedLog, to int64) (int64, error) {
	store, mu := c.storeFor(id)
	mu.Lock()
	defer mu.Unlock()
	applied, err := store.Applied()
	if err != nil {
		return 0, err
	}
	if start := log.LogStartOffset(); applied > log.LogEndOffset() || applied < start {
		if err := store.Apply(true, nil, start); err != nil {
			return 0, err
		}
		applied = start
	}
	for applied < to {
		next, changes, err := readChanges(log, id, applied, c.logger)
		if err != nil || next == applied {
			return applied, err
		}
		if err := store.Apply(false, changes, next); err != nil {
			return applied, err
		}
		applied = next
	}
	return applied, nil
}

// readChanges reads one chunk of committed records of the log from offset from
// and returns the offset after it and the records, each a transactional id's new
// latest record. Records that do not parse are logged and skipped.
func readChanges(log committedLog, id int32, from int64, logger *slog.Logger) (int64, []offsets.TxnChange, error) {
	s, err := log.ReadCommitted(from, readChunk)
	if err != nil {
		return from, nil, fmt.Errorf("read __transaction_state-%d at %d: %w", id, from, err)
	}
	var buf bytes.Buffer
	_, err = s.WriteTo(&buf)
	s.Release()
	if err != nil {
		return from, nil, fmt.Errorf("read __transaction_state-%d at %d: %w", id, from, err)
	}
	next := from
	var changes []offsets.TxnChange
	err = batch.Split(buf.Bytes(), func(h batch.Header, raw []byte) error {
		if h.NextOffset() <= next {
			return nil
		}
		next = h.NextOffset()
		if h.Control() {
			return nil
		}
		return batch.Records(raw, func(r batch.Record) error {
			if r.Offset < from {
				return nil
			}
			if _, _, err := parseRecord(r); err != nil {
				logger.Warn("transaction coordinator: skipping a record it cannot read", "partition", id, "offset", r.Offset, "err", err)
				return nil
			}
			changes = append(changes, offsets.TxnChange{Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value)})
			return nil
		})
	})
	if err != nil {
		return from, nil, fmt.Errorf("__transaction_state-%d at %d: %w", id, from, err)
	}
	return next, changes, nil
}
