// Package compaction is the log cleaner: it compacts the logs of topics with
// cleanup.policy=compact (or compact,delete), Kafka's way, keeping at least the
// latest record of every key (docs/compaction.md).
//
// A Cleaner runs CleanerConfig.Threads goroutines (cleaner.go). Each picks the
// log most in need (plan.go: the sealed segments past the cleaner point are
// dirty; a log is due when their share reaches min.cleanable.dirty.ratio, when
// its oldest dirty record passed max.compaction.lag.ms, or when a kept
// tombstone's delete horizon passed) and runs one pass over it (clean.go):
//
//  1. map every key of the dirty segments to its latest offset (offsetmap.go,
//     bounded by log.cleaner.dedupe.buffer.size: a pass covers what fits);
//  2. rewrite the compactable segments up to the end of the map, in groups of
//     consecutive segments up to segment.bytes, each into one segment
//     (logstore.Rewrite), keeping a record if it is past the map or the latest
//     of its key and not a tombstone past its delete horizon, decompressing and
//     recompressing batches with their own codec (at the topic's
//     compression.<codec>.level when that codec is its compression.type), and
//     a transaction marker until nothing of its transaction is left and its
//     delete horizon passed (markers.go). A batch the map shows wholly replaced
//     is dropped from its header: its records are not read again
//     (logstore.ScanSegmentSkipping), and their CRC was checked by step 1 when
//     the segment was dirty;
//  3. move the cleaner point to the end of the map.
//
// Offsets never change: batches keep their base offset, last offset delta,
// producer id, epoch and base sequence, so a compacted log has gaps. A batch
// left empty is kept, as a header, when it holds an active producer's last
// sequence or ends its segment. Nothing at or above the high watermark, in the
// active segment, or younger than min.compaction.lag.ms is compacted. The
// cleaner's reads and writes together are throttled (throttle.go,
// log.cleaner.io.max.bytes.per.second), and its threads run at a lower CPU
// priority than the rest of the node (priority_linux.go).
//
// Crash safety is logstore's: a rewrite is swapped in whole or not at all, and
// a pass is idempotent, so an interrupted one is simply run again.
package compaction
