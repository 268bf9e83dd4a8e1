package sharegroup

// Share group offsets administration at a partition's leader:
// AlterShareGroupOffsets moves a share-partition's start offset,
// DeleteShareGroupOffsets deletes its state (the next consumption starts afresh
// from share.auto.offset.reset). Both expect an empty group.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ResetStart makes start the SPSO of a share-partition led here, with nothing in
// flight, and returns once that is durable.
func (m *Manager) ResetStart(ctx context.Context, key Key, topic string, log Log, start int64) int16 {
	if start < log.LogStartOffset() || start > log.LastStableOffset() {
		return kerr.OffsetOutOfRange.Code
	}
	sp := m.partition(key, topic, log)
	if code := sp.waitLoaded(ctx); code != 0 {
		return code
	}
	sp.mu.Lock()
	sp.mu.w = newWindow(State{StartOffset: start})
	sp.mu.deleted = false
	v := sp.changedLocked()
	sp.mu.Unlock()
	sp.saveSoon()
	return sp.waitSaved(ctx, v)
}

// DeleteState deletes the state of a share-partition led here: it is written as
// deleted and dropped from memory.
func (m *Manager) DeleteState(ctx context.Context, key Key, topic string, log Log) int16 {
	sp := m.partition(key, topic, log)
	if code := sp.waitLoaded(ctx); code != 0 {
		return code
	}
	sp.mu.Lock()
	sp.mu.deleted = true
	v := sp.changedLocked()
	sp.mu.Unlock()
	sp.saveSoon()
	if code := sp.waitSaved(ctx, v); code != 0 {
		return code
	}
	m.mu.Lock()
	if m.mu.parts[key] == sp {
		delete(m.mu.parts, key)
	}
	m.mu.Unlock()
	sp.mu.Lock()
	sp.deposeLocked()
	sp.mu.Unlock()
	return 0
}

// StartOffset is a share-partition's SPSO as the store last has it, ok false
// when it has none (or it was deleted).
func (s *TopicStore) StartOffset(key Key) (State, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.mu.states[key]
	if !ok || st.Deleted {
		return State{}, false
	}
	return st, true
}

// GroupKeys returns the share-partitions of group with a live state in the store.
func (s *TopicStore) GroupKeys(group string) []Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Key
	for k, st := range s.mu.states {
		if k.Group == group && !st.Deleted {
			out = append(out, k)
		}
	}
	return out
}
