package logstore

import (
	"errors"
	"fmt"
)

var (
	// ErrOffsetOutOfRange: the offset is below the log start offset or above the
	// log end offset (Kafka's OFFSET_OUT_OF_RANGE).
	ErrOffsetOutOfRange = errors.New("logstore: offset out of range")
	// ErrClosed: the log was closed or deleted.
	ErrClosed = errors.New("logstore: log closed")
	// ErrNotContiguous: AppendReplica got batches whose base offset is below the
	// log end offset (or the next offset of the batch before it).
	ErrNotContiguous = errors.New("logstore: batch offsets do not follow the log")
	// ErrSegmentMissing: Open found a segment file missing between two others, for
	// offsets that had been synced (below the recovery point), or segment files
	// that overlap. The log is not opened, and nothing is changed on disk: a log
	// with a hole must not be served, and dropping the later segments would lose
	// their records.
	ErrSegmentMissing = errors.New("logstore: segment missing")
)

// CorruptionError reports invalid bytes found in a segment file while reading.
// Recovery cuts the damage it finds and logs it; it returns a CorruptionError
// only for a damaged first batch header of a segment it checked from an index
// entry: those bytes were synced, and are not cut away.
type CorruptionError struct {
	File string // segment file path
	Pos  int64  // byte position of the bad batch
	Err  error  // what is wrong (often one of the batch package errors)
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("logstore: corrupt segment %s at position %d: %v", e.File, e.Pos, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }
