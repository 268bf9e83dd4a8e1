package cluster

import (
	"math"
	"strconv"
)

// Topic config names. Every topic config of Kafka 4.x is in the table, plus
// Skiff's flush.policy; any other name is refused (Kafka's "Unknown topic config
// name").
const (
	ConfigCleanupPolicy               = "cleanup.policy"
	ConfigCompressionGzipLevel        = "compression.gzip.level"
	ConfigCompressionLz4Level         = "compression.lz4.level"
	ConfigCompressionType             = "compression.type"
	ConfigCompressionZstdLevel        = "compression.zstd.level"
	ConfigDeleteRetentionMs           = "delete.retention.ms"
	ConfigFileDeleteDelayMs           = "file.delete.delay.ms"
	ConfigFlushMessages               = "flush.messages"
	ConfigFlushMs                     = "flush.ms"
	ConfigFlushPolicy                 = "flush.policy"
	ConfigFollowerThrottledReplicas   = "follower.replication.throttled.replicas"
	ConfigIndexIntervalBytes          = "index.interval.bytes"
	ConfigLeaderThrottledReplicas     = "leader.replication.throttled.replicas"
	ConfigLocalRetentionBytes         = "local.retention.bytes"
	ConfigLocalRetentionMs            = "local.retention.ms"
	ConfigMaxCompactionLagMs          = "max.compaction.lag.ms"
	ConfigMaxMessageBytes             = "max.message.bytes"
	ConfigMessageDownconversionEnable = "message.downconversion.enable"
	ConfigMessageTimestampAfterMaxMs  = "message.timestamp.after.max.ms"
	ConfigMessageTimestampBeforeMaxMs = "message.timestamp.before.max.ms"
	ConfigMessageTimestampType        = "message.timestamp.type"
	ConfigMinCleanableRatio           = "min.cleanable.dirty.ratio"
	ConfigMinCompactionLagMs          = "min.compaction.lag.ms"
	ConfigMinInsyncReplicas           = "min.insync.replicas"
	ConfigPreallocate                 = "preallocate"
	ConfigRemoteLogCopyDisable        = "remote.log.copy.disable"
	ConfigRemoteLogDeleteOnDisable    = "remote.log.delete.on.disable"
	ConfigRemoteStorageEnable         = "remote.storage.enable"
	ConfigRetentionBytes              = "retention.bytes"
	ConfigRetentionMs                 = "retention.ms"
	ConfigSegmentBytes                = "segment.bytes"
	ConfigSegmentIndexBytes           = "segment.index.bytes"
	ConfigSegmentJitterMs             = "segment.jitter.ms"
	ConfigSegmentMs                   = "segment.ms"
	ConfigUncleanLeaderElect          = "unclean.leader.election.enable"
	// ConfigInternalSegmentBytes is Kafka 4's internal segment.bytes for tests,
	// without segment.bytes' 1 MiB minimum. It is accepted but never listed.
	ConfigInternalSegmentBytes = "internal.segment.bytes"
)

// Reasons a config has no effect, shared by several.
const (
	noTieredStorage = "a setting of tiered storage (KIP-405), which Skiff does not have: every segment stays on the broker's disk"
	maxLong         = "9223372036854775807"
)

// Values of flush.policy (see ARCHITECTURE.md, Durability).
const (
	FlushReplicated = "replicated" // acknowledged once in the page cache of every in-sync replica
	FlushAlways     = "always"     // fdatasync before acknowledging (group commit)
	FlushInterval   = "interval"   // fdatasync every flush.ms
)

// Values of cleanup.policy: a list of one or both.
const (
	CleanupDelete  = "delete"  // retention deletes old segments
	CleanupCompact = "compact" // the log cleaner keeps the latest record of each key
)

// Values of compression.type: producer keeps each batch as produced, the others
// make the broker recompress batches of another codec.
const (
	CompressionProducer     = "producer"
	CompressionUncompressed = "uncompressed"
)

// DefaultFlushMs is the built-in default of flush.ms, which the broker setting
// flush-interval (log.flush.interval.ms) also defaults to.
const DefaultFlushMs = 1000

// DefaultTimestampAfterMaxMs is Kafka 4's default of message.timestamp.after.max.ms
// (KIP-1030): a CreateTime batch more than an hour in the future is refused.
const DefaultTimestampAfterMaxMs = 3600000

// topicConfigs is the table of topic configs, sorted by name: Kafka 4.x's names,
// types, defaults, bounds and broker synonyms (LogConfig), plus Skiff's
// flush.policy. docs/configs.md is generated from it.
var topicConfigs = []ConfigSpec{
	{Name: ConfigCleanupPolicy, Type: ConfigTypeList, Default: CleanupDelete, BrokerName: "log.cleanup.policy",
		Doc:  "delete: old segments are removed by retention. compact: the log cleaner keeps the latest record of every key (docs/compaction.md). compact,delete: both. Empty: neither, every segment is kept (as in Kafka 4.2).",
		rule: listOf(CleanupCompact, CleanupDelete)},
	{Name: ConfigCompressionGzipLevel, Type: ConfigTypeInt, Default: "-1", BrokerName: "compression.gzip.level",
		Doc:  "Level of the gzip compression the broker applies under compression.type=gzip; -1: the codec's default (6, as Kafka's).",
		rule: gzipLevel},
	{Name: ConfigCompressionLz4Level, Type: ConfigTypeInt, Default: "9", BrokerName: "compression.lz4.level",
		Doc:  "Level of the lz4 compression the broker applies under compression.type=lz4: 1 is lz4's fast compressor, 2 and above its high compression (levels 9 to 17 compress alike in Skiff).",
		rule: intRule(32, 1, 17)},
	{Name: ConfigCompressionType, Type: ConfigTypeString, Default: CompressionProducer, BrokerName: "compression.type",
		Doc:  "producer: batches are kept as the producer compressed them. uncompressed, gzip, snappy, lz4 or zstd: the broker recompresses every batch produced with another codec before appending it (snappy in the xerial framing, as Kafka writes it), gzip, lz4 and zstd at compression.<codec>.level; the log cleaner, which compresses a batch it rewrites with the batch's own codec, uses that level for batches of this codec too.",
		rule: oneOf(CompressionUncompressed, "zstd", "lz4", "snappy", "gzip", CompressionProducer)},
	{Name: ConfigCompressionZstdLevel, Type: ConfigTypeInt, Default: "3", BrokerName: "compression.zstd.level",
		Doc:  "Level of the zstd compression the broker applies under compression.type=zstd (in Skiff four steps: below 3, 3 to 5, 6 to 9, 10 and above).",
		rule: intRule(32, -131072, 22)},
	{Name: ConfigDeleteRetentionMs, Type: ConfigTypeLong, Default: "86400000", BrokerName: "log.cleaner.delete.retention.ms",
		Doc:  "How long a tombstone of a compacted topic is kept after the cleaner first kept it, for consumers to see the delete.",
		rule: intRule(64, 0, math.MaxInt64)},
	{Name: ConfigFileDeleteDelayMs, Type: ConfigTypeLong, Default: "60000", BrokerName: "log.segment.delete.delay.ms",
		Doc:      "How long Kafka waits before deleting a segment file retention removed.",
		NoEffect: "Skiff removes a segment file at once: readers still sending it hold a reference that keeps it open until they finish",
		rule:     intRule(64, 0, math.MaxInt64)},
	{Name: ConfigFlushMessages, Type: ConfigTypeLong, Default: maxLong, BrokerName: "log.flush.interval.messages",
		Doc:      "Kafka fsyncs after this many messages.",
		NoEffect: "Skiff's fsyncs follow flush.policy (always syncs before every acknowledgement, with group commit)",
		rule:     intRule(64, 1, math.MaxInt64)},
	{Name: ConfigFlushMs, Type: ConfigTypeLong, Default: strconv.Itoa(DefaultFlushMs), BrokerName: "log.flush.interval.ms",
		Doc:  "Milliseconds between fdatasyncs under flush.policy=interval (Skiff's default is 1000; Kafka's is never).",
		rule: intRule(64, 0, math.MaxInt64)},
	{Name: ConfigFlushPolicy, Type: ConfigTypeString, BrokerName: "flush.policy",
		Doc:  "Skiff's: when an acknowledged batch is durable: replicated (page cache of every in-sync replica; default when replication.factor > 1), always (fdatasync before acknowledging; default when replication.factor = 1), interval (fdatasync every flush.ms).",
		rule: oneOf(FlushReplicated, FlushAlways, FlushInterval)},
	{Name: ConfigFollowerThrottledReplicas, Type: ConfigTypeList, Default: "",
		Doc:  "Replicas whose fetches are throttled to follower.replication.throttled.rate while they are not in sync.",
		rule: throttledReplicas},
	{Name: ConfigIndexIntervalBytes, Type: ConfigTypeInt, Default: "4096", BrokerName: "log.index.interval.bytes",
		Doc:  "Bytes of log between two offset index entries (0 is taken as the default).",
		rule: intRule(32, 0, math.MaxInt32)},
	{Name: ConfigInternalSegmentBytes, Type: ConfigTypeInt, internal: true,
		Doc:  "Kafka's internal override of segment.bytes without its 1 MiB minimum, for tests only; never listed.",
		rule: anyInt(32)},
	{Name: ConfigLeaderThrottledReplicas, Type: ConfigTypeList, Default: "",
		Doc:  "Replicas on their leader whose answers to followers not in sync are throttled to leader.replication.throttled.rate.",
		rule: throttledReplicas},
	{Name: ConfigLocalRetentionBytes, Type: ConfigTypeLong, Default: "-2", BrokerName: "log.local.retention.bytes",
		Doc: "Bytes kept on local disk when segments are also in remote storage; -2: retention.bytes.", NoEffect: noTieredStorage,
		rule: intRule(64, -2, math.MaxInt64)},
	{Name: ConfigLocalRetentionMs, Type: ConfigTypeLong, Default: "-2", BrokerName: "log.local.retention.ms",
		Doc: "Time segments stay on local disk when they are also in remote storage; -2: retention.ms.", NoEffect: noTieredStorage,
		rule: intRule(64, -2, math.MaxInt64)},
	{Name: ConfigMaxCompactionLagMs, Type: ConfigTypeLong, Default: maxLong, BrokerName: "log.cleaner.max.compaction.lag.ms",
		Doc:  "Longest time a record of a compacted topic stays uncompacted: a log whose oldest uncompacted record is older is compacted whatever its dirty ratio (its active segment rolls by then too).",
		rule: intRule(64, 1, math.MaxInt64)},
	{Name: ConfigMaxMessageBytes, Type: ConfigTypeInt, Default: "1048588", BrokerName: "message.max.bytes",
		Doc:  "Largest record batch accepted, in bytes (after the broker recompressed it, under compression.type).",
		rule: intRule(32, 0, math.MaxInt32)},
	{Name: ConfigMessageDownconversionEnable, Type: ConfigTypeBoolean, Default: "true", BrokerName: "log.message.downconversion.enable",
		Doc:      "Whether Kafka converted batches for consumers of old message formats.",
		NoEffect: "Skiff serves only message format 2 (Fetch v4 and later), so nothing is ever converted; Kafka 4 ignores it too",
		rule:     boolRule},
	{Name: ConfigMessageTimestampAfterMaxMs, Type: ConfigTypeLong, Default: strconv.Itoa(DefaultTimestampAfterMaxMs), BrokerName: "log.message.timestamp.after.max.ms",
		Doc:  "With message.timestamp.type=CreateTime, a batch holding a record timestamped more than this many milliseconds after the broker's clock is refused (INVALID_TIMESTAMP).",
		rule: intRule(64, 0, math.MaxInt64)},
	{Name: ConfigMessageTimestampBeforeMaxMs, Type: ConfigTypeLong, Default: maxLong, BrokerName: "log.message.timestamp.before.max.ms",
		Doc:  "With message.timestamp.type=CreateTime, a batch holding a record timestamped more than this many milliseconds before the broker's clock is refused (INVALID_TIMESTAMP).",
		rule: intRule(64, 0, math.MaxInt64)},
	{Name: ConfigMessageTimestampType, Type: ConfigTypeString, Default: "CreateTime", BrokerName: "log.message.timestamp.type",
		Doc:  "CreateTime: the producer's timestamps are kept. LogAppendTime: the broker sets each batch's maxTimestamp to the append time and marks the batch so (the batch CRC is recomputed; records keep their deltas, which consumers ignore for LogAppendTime batches).",
		rule: oneOf("CreateTime", "LogAppendTime")},
	{Name: ConfigMinCleanableRatio, Type: ConfigTypeDouble, Default: "0.5", BrokerName: "log.cleaner.min.cleanable.ratio",
		Doc:  "Share of a compacted log's compactable bytes not yet compacted at which the cleaner compacts it.",
		rule: doubleRule(0, 1)},
	{Name: ConfigMinCompactionLagMs, Type: ConfigTypeLong, Default: "0", BrokerName: "log.cleaner.min.compaction.lag.ms",
		Doc:  "Shortest time a record of a compacted topic stays uncompacted (by batch timestamp).",
		rule: intRule(64, 0, math.MaxInt64)},
	{Name: ConfigMinInsyncReplicas, Type: ConfigTypeInt, Default: "1", BrokerName: "min.insync.replicas",
		Doc:  "Fewest in-sync replicas for an acks=all produce to succeed.",
		rule: intRule(32, 1, math.MaxInt32)},
	{Name: ConfigPreallocate, Type: ConfigTypeBoolean, Default: "false", BrokerName: "log.preallocate",
		Doc:      "Whether Kafka preallocates segment files.",
		NoEffect: "Skiff's segments are plain files appended with pwrite; a preallocated file would need its end tracked apart from its size",
		rule:     boolRule},
	{Name: ConfigRemoteLogCopyDisable, Type: ConfigTypeBoolean, Default: "false",
		Doc: "Stops copying segments to remote storage.", NoEffect: noTieredStorage,
		rule: boolRule},
	{Name: ConfigRemoteLogDeleteOnDisable, Type: ConfigTypeBoolean, Default: "false",
		Doc: "Deletes remote segments when remote storage is turned off.", NoEffect: noTieredStorage,
		rule: boolRule},
	{Name: ConfigRemoteStorageEnable, Type: ConfigTypeBoolean, Default: "false",
		Doc: "Tiered storage for the topic; true is refused, as Kafka refuses it on a broker without tiered storage.", NoEffect: noTieredStorage,
		rule: onlyFalse("Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.")},
	{Name: ConfigRetentionBytes, Type: ConfigTypeLong, Default: "-1", BrokerName: "log.retention.bytes",
		Doc:  "Largest size of a partition before its oldest segments are deleted; -1 (or 0): no limit.",
		rule: anyInt(64)},
	{Name: ConfigRetentionMs, Type: ConfigTypeLong, Default: "604800000", BrokerName: "log.retention.ms",
		Doc:  "Age after which segments are deleted (by their newest batch timestamp); -1: no limit.",
		rule: intRule(64, -1, math.MaxInt64)},
	{Name: ConfigSegmentBytes, Type: ConfigTypeInt, Default: "1073741824", BrokerName: "log.segment.bytes",
		Doc:  "Segment file size at which a new segment is started; at least 1 MiB (KIP-1030).",
		rule: intRule(32, 1<<20, math.MaxInt32)},
	{Name: ConfigSegmentIndexBytes, Type: ConfigTypeInt, Default: "10485760", BrokerName: "log.index.size.max.bytes",
		Doc:      "Size of Kafka's preallocated index files, which also bounds a segment.",
		NoEffect: "Skiff's indexes are entries in the node's Pebble database, without a size of their own",
		rule:     intRule(32, 4, math.MaxInt32)},
	{Name: ConfigSegmentJitterMs, Type: ConfigTypeLong, Default: "0", BrokerName: "log.roll.jitter.ms",
		Doc:  "Each segment rolls by age up to this many milliseconds (a random amount, below segment.ms) before segment.ms, so partitions do not all roll at once.",
		rule: intRule(64, 0, math.MaxInt64)},
	{Name: ConfigSegmentMs, Type: ConfigTypeLong, Default: "604800000", BrokerName: "log.roll.ms",
		Doc:  "Age (by batch timestamps) at which a new segment is started.",
		rule: intRule(64, 1, math.MaxInt64)},
	{Name: ConfigUncleanLeaderElect, Type: ConfigTypeBoolean, Default: "false", BrokerName: "unclean.leader.election.enable",
		Doc:  "Whether a replica outside the ISR may become leader (losing data) when no ISR member is left.",
		rule: boolRule},
}
