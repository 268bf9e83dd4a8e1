package compaction

import (
	"log/slog"
	"time"

	"skiff/internal/compress"
	"skiff/logstore"
)

// Defaults of the topic configs of compaction (Kafka's).
const (
	DefaultMinCleanableRatio = 0.5            // min.cleanable.dirty.ratio
	DefaultDeleteRetention   = 24 * time.Hour // delete.retention.ms
)

// Defaults of the broker settings of the cleaner (Kafka's).
const (
	DefaultThreads          = 1                // log.cleaner.threads
	DefaultDedupeBufferSize = 128 << 20        // log.cleaner.dedupe.buffer.size
	DefaultBackoff          = 15 * time.Second // log.cleaner.backoff.ms
)

// ProducerIDExpiration is how long after its last batch a producer's state is
// kept in a compacted log: the batch that holds a producer's last sequence is
// kept (emptied if need be) until it is this old (Kafka's producer.id.expiration.ms
// default). An idempotent producer silent for longer is unknown again after a
// restart, as in Kafka.
const ProducerIDExpiration = 24 * time.Hour

// Config is one log's compaction settings: its topic's configs. The zero value
// does not compact.
type Config struct {
	// Compact: cleanup.policy holds compact.
	Compact bool
	// MinCleanableRatio is min.cleanable.dirty.ratio: a log is compacted once the
	// part not yet compacted is at least this share of its compactable bytes.
	MinCleanableRatio float64
	// MinLag is min.compaction.lag.ms: records younger than this (by batch
	// timestamp) are never compacted.
	MinLag time.Duration
	// MaxLag is max.compaction.lag.ms: a log whose oldest record not yet compacted
	// is older than this is compacted whatever its ratio; <= 0: no bound.
	MaxLag time.Duration
	// DeleteRetention is delete.retention.ms: a tombstone is kept this long after
	// the cleaner first kept it (its batch's delete horizon).
	DeleteRetention time.Duration
	// SegmentBytes is segment.bytes: the cleaner merges consecutive segments into
	// one while their sizes add up to at most this.
	SegmentBytes int64
	// LevelCodec and Level: a batch the cleaner recompresses (every batch it
	// rebuilds keeps its own codec) is compressed at Level when its codec is
	// LevelCodec, the topic's compression.type, and Level its
	// compression.<codec>.level: KIP-390's levels apply where the broker
	// compresses. Other batches, and every batch with LevelCodec None
	// (compression.type producer or uncompressed), are compressed at their
	// codec library's default level.
	LevelCodec compress.Codec
	Level      int
}

// A Target is a log the cleaner may compact: a local partition replica.
type Target interface {
	// Name names the log in log lines ("orders-3").
	Name() string
	// Log is the partition's log.
	Log() *logstore.Log
	// CompactionConfig returns the log's current settings.
	CompactionConfig() Config
	// HighWatermark bounds what is compacted: nothing at or above it.
	HighWatermark() int64
	// LastProducerOffsets returns, for each idempotent producer known to the
	// log, the last offset of its last batch: that batch is kept (emptied if
	// need be) so that the producer's sequence survives.
	LastProducerOffsets() map[int64]int64
}

// AbortedTxn is an aborted transaction of a log: its producer, the offset of its
// first record and the offset of its abort marker.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// TxnTarget is a Target whose log may hold transactions. Its HighWatermark must
// then be the last stable offset, so that no open transaction is compacted; and
// the records of its aborted transactions are dropped, never counting as the
// latest record of their key (Kafka's cleaner does the same).
type TxnTarget interface {
	Target
	// AbortedTxns returns the aborted transactions with records in [from, to).
	AbortedTxns(from, to int64) []AbortedTxn
	// ForgetAbortedTxns is told of aborted transactions whose records the
	// cleaner removed, and whose markers it will remove after
	// delete.retention.ms: read_committed readers must no longer be told of
	// them (a reader told of one whose marker is gone would skip its
	// producer's later records).
	ForgetAbortedTxns(txns []AbortedTxn)
}

// CleanerConfig configures a Cleaner.
type CleanerConfig struct {
	// Threads is log.cleaner.threads: how many logs are compacted at once
	// (default DefaultThreads).
	Threads int
	// DedupeBufferSize is log.cleaner.dedupe.buffer.size: the memory of the
	// key-to-offset maps of all threads together (default DefaultDedupeBufferSize).
	// A map is 16 bytes per key and grows as needed up to its share; a log with
	// more keys in its part not yet compacted is compacted in several passes.
	DedupeBufferSize int64
	// IOBytesPerSecond is log.cleaner.io.max.bytes.per.second: the bytes all
	// threads read and write per second together; 0: no limit (the default).
	IOBytesPerSecond int64
	// Backoff is log.cleaner.backoff.ms: how long a thread with nothing to do
	// waits before looking again (default DefaultBackoff).
	Backoff time.Duration
	// Targets returns the logs to look at (every local partition replica).
	Targets func() []Target
	// Logger receives the cleaner's log lines. Default: discard.
	Logger *slog.Logger
}

func (c CleanerConfig) withDefaults() CleanerConfig {
	if c.Threads <= 0 {
		c.Threads = DefaultThreads
	}
	if c.DedupeBufferSize <= 0 {
		c.DedupeBufferSize = DefaultDedupeBufferSize
	}
	if c.Backoff <= 0 {
		c.Backoff = DefaultBackoff
	}
	if c.Targets == nil {
		c.Targets = func() []Target { return nil }
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
