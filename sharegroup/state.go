package sharegroup

// The durable state of one share-partition, as it is written to the internal
// topic __share_group_state (docs/format/share-state.md). The layout is the code
// of that page; field order and meaning must not change.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"skiff/cluster"
)

// StateTopic is the internal topic holding every share-partition's state.
const StateTopic = cluster.ShareStateTopic

// stateVersion is the version byte of keys and values (must not change).
const stateVersion = 1

// Key names one share-partition: a share group's view of one topic partition.
type Key struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

// Record states of the in-flight window. Available records at or above the end
// of the window (SPEO) are implicit.
const (
	stateAvailable    uint8 = 0
	stateAcquired     uint8 = 1
	stateAcknowledged uint8 = 2
	stateArchived     uint8 = 4
)

// Run is a run of consecutive offsets with one state and delivery count, as stored.
// Acquired records are stored as available: a lock does not outlive its leader.
type Run struct {
	First, Last int64
	State       uint8 // stateAvailable, stateAcknowledged or stateArchived
	Count       int16 // delivery count
}

// State is a share-partition's durable state.
type State struct {
	// LeaderEpoch is the leader epoch of the topic partition whose leader wrote it,
	// and Seq its write number in that epoch: a reader keeps the greatest pair, so a
	// deposed leader's late write loses.
	LeaderEpoch int32
	Seq         int64
	// StartOffset is the SPSO: every offset below it is done.
	StartOffset int64
	// Runs are the in-flight records that are not plain available-undelivered,
	// in offset order, at or above StartOffset.
	Runs []Run
	// Deleted marks the share-partition deleted (DeleteGroups, offsets deletion).
	Deleted bool
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errCorrupt is a state key or value that cannot be decoded.
var errCorrupt = errors.New("sharegroup: corrupt state record")

// encodeKey: version u8, group length u16, group, topic id [16], partition i32.
func encodeKey(k Key) []byte {
	b := make([]byte, 0, 1+2+len(k.Group)+16+4)
	b = append(b, stateVersion)
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.Group)))
	b = append(b, k.Group...)
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

func decodeKey(b []byte) (Key, error) {
	if len(b) < 3 || b[0] != stateVersion {
		return Key{}, errCorrupt
	}
	n := int(binary.BigEndian.Uint16(b[1:]))
	if len(b) != 3+n+16+4 {
		return Key{}, errCorrupt
	}
	var k Key
	k.Group = string(b[3 : 3+n])
	copy(k.TopicID[:], b[3+n:])
	k.Partition = int32(binary.BigEndian.Uint32(b[3+n+16:]))
	return k, nil
}

// encodeState: version u8, crc32c u32 of the rest, leader epoch i32, seq i64,
// start offset i64, deleted u8, run count u32, runs (first i64, last i64, state
// u8, count i16).
func encodeState(s State) []byte {
	b := make([]byte, 5, 5+4+8+8+1+4+len(s.Runs)*19)
	b[0] = stateVersion
	b = binary.BigEndian.AppendUint32(b, uint32(s.LeaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Seq))
	b = binary.BigEndian.AppendUint64(b, uint64(s.StartOffset))
	del := byte(0)
	if s.Deleted {
		del = 1
	}
	b = append(b, del)
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.Runs)))
	for _, r := range s.Runs {
		b = binary.BigEndian.AppendUint64(b, uint64(r.First))
		b = binary.BigEndian.AppendUint64(b, uint64(r.Last))
		b = append(b, r.State)
		b = binary.BigEndian.AppendUint16(b, uint16(r.Count))
	}
	binary.BigEndian.PutUint32(b[1:], crc32.Checksum(b[5:], castagnoli))
	return b
}

func decodeState(b []byte) (State, error) {
	const fixed = 5 + 4 + 8 + 8 + 1 + 4
	if len(b) < fixed || b[0] != stateVersion {
		return State{}, errCorrupt
	}
	if crc32.Checksum(b[5:], castagnoli) != binary.BigEndian.Uint32(b[1:]) {
		return State{}, fmt.Errorf("%w: checksum mismatch", errCorrupt)
	}
	var s State
	s.LeaderEpoch = int32(binary.BigEndian.Uint32(b[5:]))
	s.Seq = int64(binary.BigEndian.Uint64(b[9:]))
	s.StartOffset = int64(binary.BigEndian.Uint64(b[17:]))
	s.Deleted = b[25] == 1
	n := int(binary.BigEndian.Uint32(b[26:]))
	if len(b) != fixed+n*19 {
		return State{}, errCorrupt
	}
	s.Runs = make([]Run, n)
	for i := range s.Runs {
		p := b[fixed+i*19:]
		s.Runs[i] = Run{
			First: int64(binary.BigEndian.Uint64(p)),
			Last:  int64(binary.BigEndian.Uint64(p[8:])),
			State: p[16],
			Count: int16(binary.BigEndian.Uint16(p[17:])),
		}
	}
	return s, nil
}

// newer reports whether a supersedes b.
func (a State) newer(b State) bool {
	if a.LeaderEpoch != b.LeaderEpoch {
		return a.LeaderEpoch > b.LeaderEpoch
	}
	return a.Seq > b.Seq
}
