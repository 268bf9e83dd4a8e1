package logstore

// SegmentMeta is what the index records about one segment. It is an alias of an
// unnamed struct type so that an Index implementation (package offsets) can
// declare an identical type without importing logstore; keep the two in step (a
// compile-time assertion in this package's tests checks it).
type SegmentMeta = struct {
	BaseOffset   int64 // offset of the first batch; also the file name
	Size         int64 // bytes in the file
	NextOffset   int64 // offset after the last batch (BaseOffset when empty)
	MaxTimestamp int64 // largest batch maxTimestamp in the segment, -1 when empty
	Closed       bool  // rolled and fsynced: Size and NextOffset are final
}

// IndexEntry is one sparse index entry: the batch with base offset Offset starts
// at byte Pos of its segment, and MaxTimestampBefore is the largest maxTimestamp
// of the segment's batches before it (-1 if none). Alias of an unnamed struct,
// like SegmentMeta.
type IndexEntry = struct {
	Offset             int64
	Pos                int64
	MaxTimestampBefore int64
}

// Index stores the derived data of one partition log. The log calls it from one
// goroutine at a time for writes and from any goroutine for lookups, so an
// implementation must be safe for concurrent use.
//
// Writes need not be durable when they return (the log never trusts the index
// beyond what it can verify against the segments), except where a method says so.
// Entries of a segment are kept per segment base offset: offset entries ordered by
// Offset, time entries ordered by MaxTimestampBefore, which is non-decreasing in
// Offset within a segment.
type Index interface {
	// Segments returns the recorded metadata of every segment, in any order.
	Segments() ([]SegmentMeta, error)
	// PutSegment records or replaces the metadata of segment m.BaseOffset.
	PutSegment(m SegmentMeta) error
	// DeleteSegment removes the metadata and every entry of one segment.
	DeleteSegment(base int64) error

	// PutEntry records e in both the offset index and the time index of segment
	// segBase. A time entry with the same MaxTimestampBefore is replaced.
	PutEntry(segBase int64, e IndexEntry) error
	// LookupOffset returns the entry of segment segBase with the largest Offset
	// <= offset; ok is false if there is none.
	LookupOffset(segBase, offset int64) (e IndexEntry, ok bool, err error)
	// LookupTimestamp returns the time entry of segment segBase with the largest
	// MaxTimestampBefore < ts; ok is false if there is none.
	LookupTimestamp(segBase, ts int64) (e IndexEntry, ok bool, err error)
	// TruncateEntries removes every entry of segment segBase whose Offset >= offset,
	// from both indexes.
	TruncateEntries(segBase, offset int64) error

	// RecoveryPoint returns the persisted recovery point: every batch below it was
	// fsynced. 0 if none was recorded.
	RecoveryPoint() (int64, error)
	// SetRecoveryPoint records the recovery point; with durable it is on stable
	// storage when the call returns (used when the recovery point moves down).
	SetRecoveryPoint(offset int64, durable bool) error
	// LogStartOffset returns the persisted log start offset, 0 if none.
	LogStartOffset() (int64, error)
	// SetLogStartOffset records the log start offset; with durable it is on stable
	// storage when the call returns (used when DeleteRecords moves it: the only
	// copy of that fact).
	SetLogStartOffset(offset int64, durable bool) error

	// CleanerPoint returns the persisted cleaner point: the log cleaner has
	// compacted the log below it. 0 if none was recorded.
	CleanerPoint() (int64, error)
	// SetCleanerPoint records the cleaner point.
	SetCleanerPoint(offset int64) error

	// Delete removes everything recorded for the partition.
	Delete() error
}
