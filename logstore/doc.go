// Package logstore keeps one partition replica's log: segment files of raw Kafka
// RecordBatch v2 bytes, appended whole and served back as file ranges for sendfile.
//
// The on-disk format, what is fsynced when, how recovery works and how retention
// moves the log start offset are described in docs/format/segment.md (in the
// repository root); keep that page and this package in step.
//
// # Files
//
// A Log owns one directory (<data>/topics/<topic>-<p>/). Each segment is a file
// named "%020d.log" after the base offset of its first batch and holds whole
// batches back to back, exactly as produced apart from baseOffset and
// partitionLeaderEpoch, which the log assigns. The last segment is the active
// one; only it is ever appended to. The log cleaner replaces closed segments by
// rewritten ones (Rewrite, clean.go), keeping every batch's offsets, so a
// compacted log has gaps. Other files in the directory (for example the
// replication layer's leader-epochs checkpoint) are left alone.
//
// # Filesystem and durability
//
// Files are reached through Config.FS, Pebble's vfs.FS (vfs.Default in production,
// internal/crashfs in crash tests). Append writes to the page cache only; Sync
// fdatasyncs everything appended so far (rolled segments, the folder, the active
// segment) without blocking appends, and SyncedOffset reports how far that got.
// A failed write is cut off and returned, and the log goes on; a failed fsync is
// latched (Failed). See docs/durability.md.
//
// # Index
//
// Segments are the truth. Everything else (segment metadata, a sparse offset
// index, a time index, the recovery point and the log start offset) is derived
// data kept behind the Index interface, which the node implements on Pebble
// (package offsets). Open rebuilds whatever of it it cannot verify.
//
// # Concurrency
//
// A Log is safe for concurrent use. Writers (Append, AppendReplica, Truncate,
// ApplyRetention, Sync, Close, Delete) are serialised by appendMu; readers (Read,
// OffsetForTimestamp, ScanHeaders, ScanSegment, ScanSegmentSkipping) run
// concurrently with each other and with the writer. A Rewrite (clean.go) builds its segment without locks and
// swaps it in under cleanMu, which the writers that remove segments also take,
// so that appends go on during its fsyncs. Lock order:
//
//  1. Log.cleanMu (Rewrite.Commit, ApplyRetention, Truncate, Reset, Close,
//     Delete, SetCleanerPoint)
//  2. Log.appendMu (writers only; held across file writes and index writes)
//  3. Log.mu (RWMutex over the segment list and the published sizes; never held
//     across file I/O or index calls, only while publishing or snapshotting)
//  4. segFile.mu (one segment file's descriptor and users; held while it is
//     opened), then FileCache.mu (the LRU of idle files; files.go)
//
// Readers take mu in read mode to snapshot the segments they need, release mu,
// then open (acquire) each segment file as they get to it and do their I/O, so a
// slow disk read never blocks an append. Truncate bumps a generation counter
// under mu; a reader that sees the generation change during its I/O starts over.
//
// # Open files
//
// Only the active segment's file, and a rolled one until its fdatasync, are
// kept open (pinned), for writing. A sealed segment's file is opened,
// read-only, when a reader needs it (a pin, such as Truncate's, opens it again
// for writing) and, once idle, left in a FileCache that the node's logs share
// (Config.Files), which closes the least recently used idle files beyond its
// capacity. A file in use is closed only when its last user lets go, so a Slice
// stays valid until Slice.Release even if retention, Truncate, a Rewrite, Close
// or Delete removed the segment meanwhile (the file descriptor is never closed
// and reused under a pending sendfile). Before a segment's name is removed or
// renamed over, its file is retired: never opened by name again, since the name
// may then be another file's; a reader that finds it retired and closed waits
// for the writer (cleanMu) and starts over.
//
// LogStartOffset, LogEndOffset and Size read atomics and never block.
package logstore
