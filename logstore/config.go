package logstore

import (
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Defaults applied by Open to zero fields of Config. They follow Kafka's topic
// configuration defaults.
const (
	DefaultSegmentBytes       = 1 << 30                                      // segment.bytes: 1 GiB
	DefaultSegmentMs          = int64(7 * 24 * time.Hour / time.Millisecond) // segment.ms: 7 days
	DefaultRetentionMs        = int64(7 * 24 * time.Hour / time.Millisecond) // retention.ms: 7 days
	DefaultIndexIntervalBytes = 4096                                         // index.interval.bytes
)

// Config holds the settings of one partition log. The zero value is valid: every
// zero field takes its documented default.
type Config struct {
	// SegmentBytes (segment.bytes) is the size at which the active segment is
	// rolled: a batch that would push the active segment past it goes into a new
	// segment. A batch larger than SegmentBytes is stored alone in a fresh segment.
	// Default 1 GiB.
	SegmentBytes int64

	// SegmentMs (segment.ms) rolls the active segment by age, as Kafka does, using
	// batch timestamps rather than a clock: a batch whose maxTimestamp is more than
	// SegmentMs after the maxTimestamp of the active segment's first batch starts a
	// new segment. Default 7 days.
	SegmentMs int64

	// SegmentJitterMs (segment.jitter.ms) rolls each segment by age a little
	// earlier than SegmentMs, by an amount below min(SegmentJitterMs, SegmentMs)
	// that differs between segments and partitions, so that partitions filled at
	// the same time do not all roll at once. Default 0: none.
	SegmentJitterMs int64

	// RetentionMs (retention.ms) deletes a closed segment once its largest batch
	// maxTimestamp is older than now-RetentionMs (see ApplyRetention). -1 keeps data
	// forever. Default 7 days (0 means the default).
	RetentionMs int64

	// RetentionBytes (retention.bytes) deletes the oldest segments while the log
	// would still hold at least RetentionBytes without them (Kafka's rule). -1 or 0
	// means no limit, the default.
	RetentionBytes int64

	// IndexIntervalBytes (index.interval.bytes) is how many bytes of batches go by
	// between two sparse index entries: Read and OffsetForTimestamp scan at most
	// about this many bytes of headers past an index entry. Default 4096.
	IndexIntervalBytes int64

	// Logger receives recovery and retention events. Default: discard.
	Logger *slog.Logger

	// FS is the filesystem of the segment files: Pebble's vfs.FS, so that a node
	// can share one with its Pebble database and tests can run a log on a
	// filesystem that loses unsynced data (internal/crashfs). Its files must also
	// have a Truncate(size int64) error method, as vfs.Default's do (they embed
	// *os.File). Default vfs.Default.
	FS vfs.FS

	// Files keeps the sealed segment files of every log that shares it open
	// within a bound (files.go): a node passes one cache to all its logs.
	// Default: one cache per process, of DefaultFileCacheSize.
	Files *FileCache
}

func (c Config) withDefaults() Config {
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.SegmentMs <= 0 {
		c.SegmentMs = DefaultSegmentMs
	}
	if c.RetentionMs == 0 {
		c.RetentionMs = DefaultRetentionMs
	}
	if c.RetentionMs < 0 {
		c.RetentionMs = -1
	}
	if c.RetentionBytes <= 0 {
		c.RetentionBytes = -1
	}
	if c.SegmentJitterMs < 0 {
		c.SegmentJitterMs = 0
	}
	if c.IndexIntervalBytes <= 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.FS == nil {
		c.FS = vfs.Default
	}
	if c.Files == nil {
		c.Files = sharedDefaultCache()
	}
	return c
}

// SetConfig changes the log's settings while it runs: SegmentBytes,
// SegmentMs, SegmentJitterMs, RetentionMs, RetentionBytes and
// IndexIntervalBytes take effect from the next append, retention pass or rewrite
// (zero fields take their defaults; Logger, FS and Files are kept). The config is read
// under appendMu or mu, so both are held to change it.
func (l *Log) SetConfig(cfg Config) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	cfg.Logger, cfg.FS, cfg.Files = l.cfg.Logger, l.cfg.FS, l.cfg.Files
	l.cfg = cfg.withDefaults()
}
