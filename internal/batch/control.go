package batch

// Control batches: the commit and abort markers a transaction coordinator writes to
// every partition of a transaction (Kafka's format, docs/format/transactions.md).
//
//	batch   attributes transactional|control, producer id and epoch of the
//	        transaction, baseSequence -1, one record
//	key     version i16 (0), type i16 (0 abort, 1 commit)
//	value   version i16 (0), coordinator epoch i32

import (
	"encoding/binary"
	"errors"
)

// Control record types; Kafka's, they must not change.
const (
	ControlAbort  int16 = 0
	ControlCommit int16 = 1
)

// BuildControl returns a control batch holding one commit (commit set) or abort
// marker of producer id pid at epoch, written by a coordinator in coordinatorEpoch,
// stamped ts (Unix ms). Its base offset and leader epoch are assigned on append.
func BuildControl(ts, pid int64, epoch int16, commit bool, coordinatorEpoch int32) []byte {
	typ := ControlAbort
	if commit {
		typ = ControlCommit
	}
	key := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), uint16(typ))
	value := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, 0), uint32(coordinatorEpoch))
	return withProducer(Build(ts, []Record{{Key: key, Value: value}}), AttrTransactional|AttrControl, pid, epoch)
}

// BuildTransactional is Build for records a coordinator writes inside producer
// pid's transaction at epoch (TxnOffsetCommit): transactional, with no sequence.
func BuildTransactional(ts, pid int64, epoch int16, records []Record) []byte {
	return withProducer(Build(ts, records), AttrTransactional, pid, epoch)
}

func withProducer(b []byte, attrs int16, pid int64, epoch int16) []byte {
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(attrs))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(epoch))
	binary.BigEndian.PutUint32(b[offCRC:], CRC(b))
	return b
}

// ErrControl: a control batch does not hold a readable marker.
var ErrControl = errors.New("batch: malformed control record")

// ControlType returns the type of the marker in control batch b (whole, as read
// from a log): ControlAbort or ControlCommit, or another type Kafka may define.
func ControlType(b []byte) (int16, error) {
	typ, _, err := ParseControl(b)
	return typ, err
}

// ParseControl returns the type of the marker in control batch b (whole, as read
// from a log) and, for a commit or abort marker, the epoch of the coordinator
// that wrote it (-1 for other types, or a value too short to hold it).
func ParseControl(b []byte) (typ int16, coordinatorEpoch int32, err error) {
	typ, coordinatorEpoch = -1, -1
	err = Records(b, func(r Record) error {
		if len(r.Key) < 4 {
			return ErrControl
		}
		typ = int16(binary.BigEndian.Uint16(r.Key[2:]))
		if (typ == ControlAbort || typ == ControlCommit) && len(r.Value) >= 6 {
			coordinatorEpoch = int32(binary.BigEndian.Uint32(r.Value[2:]))
		}
		return nil
	})
	if err == nil && typ < 0 {
		err = ErrControl
	}
	return typ, coordinatorEpoch, err
}

// IsTransactional reports whether b starts with a batch header whose transactional
// flag is set (before b is checked: a malformed b is refused later).
func IsTransactional(b []byte) bool {
	return len(b) >= HeaderSize && binary.BigEndian.Uint16(b[offAttributes:])&AttrTransactional != 0
}
