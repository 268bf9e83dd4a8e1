package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/compaction"
	"skiff/internal/batch"
	"skiff/internal/compress"
	"skiff/logstore"
)

// PartitionConfig holds the per-topic settings a partition applies to appends.
type PartitionConfig struct {
	// Log is handed to logstore (segment.bytes, retention, ...).
	Log logstore.Config
	// MaxMessageBytes is max.message.bytes: the largest batch accepted (default 1048588).
	MaxMessageBytes int
	// LogAppendTime is message.timestamp.type=LogAppendTime: the broker stamps batches.
	LogAppendTime bool
	// Timestamps bounds the producer's timestamps of CreateTime batches.
	Timestamps TimestampBounds
	// Recompress is compression.type other than producer: every produced batch
	// whose records are not compressed with Codec is recompressed with it before
	// it is appended (compress.None: uncompressed). MaxMessageBytes applies to the
	// batch as produced and as stored.
	Recompress bool
	Codec      compress.Codec
	// Level is the level Codec compresses at: compression.gzip.level,
	// compression.lz4.level or compression.zstd.level (compress.CompressLevel).
	Level int
	// MinInsyncReplicas is min.insync.replicas: an acks=all produce is refused
	// (NOT_ENOUGH_REPLICAS) while the ISR is smaller (default 1).
	MinInsyncReplicas int
	// Flush is flush.policy (flush.go); the zero value is FlushReplicated.
	Flush FlushPolicy
	// FlushInterval is flush.ms, used by FlushInterval (0: sync after every append).
	FlushInterval time.Duration
	// Compaction is the log cleaner's settings (cleanup.policy=compact and the
	// compaction configs). A compacted topic refuses records without a key.
	Compaction compaction.Config
	// FollowerThrottledReplicas is follower.replication.throttled.replicas: the
	// replicas whose fetches are throttled while out of sync (throttle.go).
	FollowerThrottledReplicas string
	// LeaderThrottledReplicas is leader.replication.throttled.replicas: the
	// replicas whose answers to out-of-sync followers are throttled (throttle.go).
	LeaderThrottledReplicas string
}

// TimestampBounds are message.timestamp.before.max.ms and
// message.timestamp.after.max.ms. With Check set and CreateTime, a batch is refused
// (INVALID_TIMESTAMP) whose first timestamp is more than BeforeMs before the
// broker's clock, or whose largest timestamp is more than AfterMs after it. Kafka
// checks every record; Skiff reads the batch header only (records stay as
// produced), so a record stamped before its batch's first one, which producers do
// not write, is not checked. The zero value checks nothing.
type TimestampBounds struct {
	Check             bool
	BeforeMs, AfterMs int64
}

// bounds returns the timestamps allowed at now (ms), inclusive.
func (b TimestampBounds) bounds(now int64) (lo, hi int64) {
	lo, hi = now-b.BeforeMs, now+b.AfterMs
	if b.BeforeMs > now { // no overflow below the epoch
		lo = math.MinInt64
	}
	if b.AfterMs > math.MaxInt64-now {
		hi = math.MaxInt64
	}
	return lo, hi
}

// check returns why h's timestamps are out of bounds at now (ms), or nil.
func (b TimestampBounds) check(h *batch.Header, now int64) error {
	if !b.Check {
		return nil
	}
	lo, hi := b.bounds(now)
	for _, ts := range []int64{h.BaseTimestamp, h.MaxTimestamp} {
		if ts < lo || ts > hi {
			return fmt.Errorf("timestamp %d of the batch is out of range: it must be within [%d, %d] (message.timestamp.before.max.ms %d, message.timestamp.after.max.ms %d): %w",
				ts, lo, hi, b.BeforeMs, b.AfterMs, kerr.InvalidTimestamp)
		}
	}
	return nil
}

// maxRecompressBytes bounds what the records of one batch may decompress to when
// the broker recompresses them, so that a small hostile batch cannot take its
// memory; Kafka's largest batches are far smaller.
const maxRecompressBytes = 128 << 20

// recompress returns the batch b with its records compressed by cfg.Codec.
func recompress(b []byte, cfg *PartitionConfig) ([]byte, error) {
	out, err := batch.Recompress(b, cfg.Codec, cfg.Level, maxRecompressBytes)
	switch {
	case errors.Is(err, compress.ErrTooLarge):
		return nil, fmt.Errorf("the records decompress to more than %d bytes: %w", maxRecompressBytes, kerr.InvalidRecord)
	case err != nil:
		return nil, fmt.Errorf("recompress to %v: %v: %w", cfg.Codec, err, kerr.CorruptMessage)
	case len(out) > cfg.MaxMessageBytes:
		return nil, fmt.Errorf("batch of %d bytes recompressed with %v exceeds max.message.bytes %d: %w", len(out), cfg.Codec, cfg.MaxMessageBytes, kerr.MessageTooLarge)
	}
	return out, nil
}

// AppendResult is what a producer is told about an appended batch.
type AppendResult struct {
	BaseOffset int64
	// LastOffset is the offset of the batch's last record.
	LastOffset int64
	// LogAppendTime is the broker's timestamp for LogAppendTime topics, else -1.
	LogAppendTime int64
	// Duplicate is set when the batch was a retry of one already in the log: nothing
	// was appended and BaseOffset is the original one. For a stale TV2 marker
	// (WriteMarker) nothing was appended either, and LastOffset is the first offset
	// of the transaction that made it stale.
	Duplicate bool
	// LeaderEpoch is the epoch this replica led in when it appended the batch
	// (or found it appended): WaitAcked acknowledges it only while that
	// leadership lasts.
	LeaderEpoch int32
}

// Store is the persistent per-partition data a replica needs: the log index that
// logstore uses, the high-watermark checkpoint, and the producer state
// (producer_store.go). Delete removes the producer state too.
type Store interface {
	logstore.Index
	// HighWatermark returns the last checkpointed high watermark, ok=false if none.
	HighWatermark() (hw int64, ok bool, err error)
	// SetHighWatermark checkpoints the high watermark (need not be durable).
	SetHighWatermark(hw int64) error
	// ProducerSnapshot returns the latest producer-state snapshot and the log
	// end offset it was taken at, ok=false if none.
	ProducerSnapshot() (offset int64, snapshot []byte, ok bool, err error)
	// AbortedTxnRecords calls fn with every recorded aborted transaction, by
	// marker offset.
	AbortedTxnRecords(fn func(abortedRecord) error) error
	// UpdateProducerState applies u atomically.
	UpdateProducerState(u ProducerStateUpdate) error
}

// ProducerStateUpdate is one atomic change of a partition's stored producer
// state (offsets.ProducerStateUpdate): the aborted transactions whose marker
// offsets are in the Drop ranges [lo, hi) are deleted, then Aborted recorded,
// then the snapshot set or deleted; Sync makes it durable before it returns.
type ProducerStateUpdate = struct {
	Drop                        [][2]int64
	Aborted                     []abortedRecord
	SetSnapshot, DeleteSnapshot bool
	SnapshotOffset              int64
	Snapshot                    []byte
	Sync                        bool
}

type role int

const (
	roleNone     role = iota // no leader, or not decided yet
	roleLeader               // this replica leads
	roleFollower             // this replica copies the leader's log
)

// Partition is the local replica of one topic partition: a leader that accepts
// produce requests and serves consumers and followers below and up to its high
// watermark, or a follower that copies its leader's log (follower.go).
//
// Lock order: appendMu, then stateMu, then waitMu. None is held while calling out of
// the package, except that appendMu is held around log writes.
type Partition struct {
	Topic   string
	ID      int32
	TopicID [16]byte

	self   int32 // this broker
	log    *logstore.Log
	store  Store
	logger *slog.Logger
	cfg    atomic.Pointer[PartitionConfig]
	// leaderThrottle is the broker's leader.replication.throttled.rate budget
	// (throttle.go); nil in tests that open a partition alone: no throttle.
	leaderThrottle *byteThrottle

	leaderEpoch  atomic.Int32
	leader       atomic.Bool  // the partition state names this broker as leader
	fenced       atomic.Bool  // the broker has no session: it must not lead
	sessionValid func() bool  // the broker's lease is certainly alive
	selfEpoch    func() int64 // this broker's current registration (broker epoch)
	// leaderBrokerEpoch is the broker epoch the partition state elected its leader
	// under (0: unknown): leading needs it to be this broker's current one.
	leaderBrokerEpoch atomic.Int64
	hw                atomic.Int64
	// leaderStart is the log end offset when this replica last became leader: its
	// high watermark is known once it reaches it (HighWatermarkKnown).
	leaderStart atomic.Int64
	savedHW     int64 // last checkpointed high watermark; owned by the checkpoint loop

	appendMu      sync.Mutex
	producers     producerStates // guarded by appendMu
	txns          *txnIndex      // see txnIndex for its locking
	epochs        *epochCache    // guarded by appendMu
	appendFailing bool           // the last append failed (for logging); guarded by appendMu
	// abortUnrecorded: an aborted transaction's Store write failed, so no
	// snapshot may pass it until an open or restore records it again;
	// guarded by appendMu.
	abortUnrecorded bool
	// producerExpiry is producer.id.expiration.ms, applied when the state is
	// restored (0: none).
	producerExpiry time.Duration
	snap           snapshotState // producer_snapshot.go
	// holds counts the batches waiting for a previous transaction's marker
	// (txn_hold.go).
	holds atomic.Int32

	stateMu sync.Mutex
	st      replicaState // guarded by stateMu

	waitMu  sync.Mutex
	waiters map[chan<- struct{}]struct{} // guarded by waitMu
	// replicaWaiters are parked follower fetches (AddReplicaWaiter); guarded by waitMu.
	replicaWaiters map[chan<- struct{}]struct{}

	syncer   syncer // the flush.policy goroutine (flush.go)
	stopOnce sync.Once
}

// replicaState is the partition's replication state as this replica knows it.
type replicaState struct {
	role           role
	leaderID       int32
	replicas       []int32
	isr            []int32
	partitionEpoch int32
	// followers tracks every other replica while this one leads.
	followers map[int32]*followerProgress
	// isrChanging is set while an ISR change of this leader is being written.
	isrChanging bool
	// needTruncate is set when this replica became a follower of a new leader or
	// epoch: it must truncate its log to the leader's (OffsetForLeaderEpoch) first.
	needTruncate bool
}

// followerProgress is what a leader knows of one follower (Kafka's replica state).
type followerProgress struct {
	leo           int64     // the follower's log end offset: its last fetch offset, -1 unknown
	logStart      int64     // the follower's log start offset, as its last fetch said; -1 unknown
	lastCaughtUp  time.Time // the last time its log end reached the leader's
	lastFetchLEO  int64     // the leader's log end at the follower's previous fetch
	lastFetchTime time.Time
}

func openPartition(fs vfs.FS, dir, topic string, id int32, topicID [16]byte, cfg PartitionConfig, store Store, self int32,
	producerExpiry time.Duration, logger *slog.Logger) (*Partition, error) {
	cfg.Log.FS = fs
	l, err := logstore.Open(dir, cfg.Log, store)
	if err != nil {
		return nil, err
	}
	epochs, err := loadEpochs(fs, dir)
	rebuildEpochs := errors.Is(err, errEpochsCorrupt)
	if rebuildEpochs {
		// Derived data: every batch carries its leader epoch, so the checkpoint is
		// rebuilt from the log (losing only epochs that appended nothing).
		logger.Warn("leader-epoch checkpoint damaged; rebuilding it from the log", "dir", dir, "err", err)
		epochs, err = &epochCache{fs: fs, path: fs.PathJoin(dir, epochsFile)}, nil
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	p := &Partition{
		Topic:          topic,
		ID:             id,
		TopicID:        topicID,
		self:           self,
		log:            l,
		store:          store,
		logger:         logger.With("topic", topic, "partition", id),
		producers:      newProducerStates(),
		txns:           newTxnIndex(),
		epochs:         epochs,
		producerExpiry: producerExpiry,
		snap:           newSnapshotState(),
		waiters:        make(map[chan<- struct{}]struct{}),
		replicaWaiters: make(map[chan<- struct{}]struct{}),
		st:             replicaState{leaderID: -1},
	}
	p.cfg.Store(&cfg)
	// Epochs past the log end belong to records recovery dropped.
	if err := epochs.truncateFrom(l.LogEndOffset() + 1); err != nil {
		l.Close()
		return nil, err
	}
	// Idempotent producers' and transactions' state: the Store's snapshot and
	// the log after it (the whole log when the epochs are rebuilt too).
	var each func(h *batch.Header)
	if rebuildEpochs {
		each = func(h *batch.Header) {
			if h.LeaderEpoch > epochs.latest() {
				epochs.entries = append(epochs.entries, epochEntry{h.LeaderEpoch, h.BaseOffset})
			}
		}
	}
	if err := p.restoreProducersLocked(rebuildEpochs, each); err != nil {
		l.Close()
		return nil, fmt.Errorf("rebuild producer state of %s-%d: %w", topic, id, err)
	}
	if rebuildEpochs {
		if err := epochs.save(); err != nil {
			l.Close()
			return nil, err
		}
	}
	// The high watermark starts at its checkpoint: records above it may not be on
	// any other replica yet, so consumers must not see them before they are again.
	hw := l.LogEndOffset()
	if saved, ok, err := store.HighWatermark(); err != nil {
		l.Close()
		return nil, err
	} else if ok {
		hw = min(saved, hw)
	}
	p.hw.Store(hw)
	p.savedHW = hw
	p.startSyncer()
	return p, nil
}

// SetConfig replaces the partition's settings (topic configs changed); the log
// takes changed settings at once (logstore.Log.SetConfig). It reports whether the
// compaction settings changed.
func (p *Partition) SetConfig(cfg PartitionConfig) bool {
	old := p.cfg.Swap(&cfg)
	a, b := old.Log, cfg.Log
	a.Logger, a.FS, b.Logger, b.FS = nil, nil, nil, nil
	if a != b {
		p.log.SetConfig(cfg.Log)
	}
	if old.Flush != cfg.Flush || old.FlushInterval != cfg.FlushInterval {
		p.requestSync() // the syncer picks up the new policy
	}
	return old.Compaction != cfg.Compaction
}

// LeaderEpoch is the epoch of the current leadership of this partition.
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch.Load() }

// IsLeader reports whether this replica leads: the partition state names this broker
// and the broker holds its session.
func (p *Partition) IsLeader() bool {
	if !p.leader.Load() || p.fenced.Load() || (p.sessionValid != nil && !p.sessionValid()) {
		return false
	}
	e := p.leaderBrokerEpoch.Load()
	return e == 0 || p.selfEpoch == nil || e == p.selfEpoch()
}

// HighWatermark is the offset below which records are committed and visible to consumers.
func (p *Partition) HighWatermark() int64 { return p.hw.Load() }

// HighWatermarkKnown reports whether a leader's high watermark has reached the
// start of its leader epoch. A new leader's high watermark lags what its
// predecessor committed until its followers' fetches tell it their log ends:
// until then the end of the committed log is not known here, and ListOffsets
// answers OFFSET_NOT_AVAILABLE for it, as Kafka does.
func (p *Partition) HighWatermarkKnown() bool { return p.hw.Load() >= p.leaderStart.Load() }

// LogStartOffset is the first offset still in the log.
func (p *Partition) LogStartOffset() int64 { return p.log.LogStartOffset() }

// LogEndOffset is the offset the next appended record gets.
func (p *Partition) LogEndOffset() int64 { return p.log.LogEndOffset() }

// ISR returns the in-sync replicas as this replica knows them.
func (p *Partition) ISR() []int32 {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	return append([]int32(nil), p.st.isr...)
}

// Append validates one produced batch and appends it; the caller waits for the high
// watermark itself when the producer asked for acks=all. Errors wrap a *kerr.Error
// naming the Kafka error code; nothing is appended when one is returned.
func (p *Partition) Append(records []byte, acks int16) (AppendResult, error) {
	return p.append(records, acks, nil, false)
}

// AppendVerified is Append for a transactional batch whose transaction the
// coordinator confirmed includes this partition (KIP-890 part 1), with the guard
// TxnVerification gave before asking: a marker of the producer appended since
// voids the confirmation (INVALID_TXN_STATE).
func (p *Partition) AppendVerified(records []byte, acks int16, guard uint64) (AppendResult, error) {
	return p.append(records, acks, &guard, false)
}

// AppendTV2Verified is AppendTV2 with AppendVerified's guard (TxnVerification,
// taken once the batch's place in its transaction is known: added by the
// coordinator, or open here at its epoch): a marker of the producer appended
// since voids it (INVALID_TXN_STATE), so that a batch of a transaction that
// ended meanwhile does not open another one no coordinator knows.
func (p *Partition) AppendTV2Verified(records []byte, acks int16, guard uint64) (AppendResult, error) {
	return p.append(records, acks, &guard, true)
}

// append appends one produced batch: guard, when set, is AppendVerified's; tv2
// is AppendTV2's.
func (p *Partition) append(records []byte, acks int16, guard *uint64, tv2 bool) (AppendResult, error) {
	res := AppendResult{LogAppendTime: -1}
	cfg := p.cfg.Load()
	if len(records) > cfg.MaxMessageBytes {
		return res, fmt.Errorf("batch of %d bytes exceeds max.message.bytes %d: %w", len(records), cfg.MaxMessageBytes, kerr.MessageTooLarge)
	}
	h, err := batch.Check(records)
	if err != nil {
		if errors.Is(err, batch.ErrLength) && len(records) >= batch.HeaderSize && h.Size() < int64(len(records)) {
			return res, fmt.Errorf("more than one batch in a produce request: %w", kerr.InvalidRecord)
		}
		return res, fmt.Errorf("%v: %w", err, kerr.CorruptMessage)
	}
	if h.Control() {
		return res, fmt.Errorf("control batches cannot be produced: %w", kerr.InvalidRecord)
	}
	if h.Transactional() && !h.Idempotent() {
		return res, fmt.Errorf("transactional batch without a producer id: %w", kerr.InvalidRecord)
	}
	if h.RecordCount == 0 {
		return res, fmt.Errorf("empty batch: %w", kerr.InvalidRecord)
	}
	if !h.Dense() { // only compaction leaves gaps in a batch
		return res, fmt.Errorf("%w: lastOffsetDelta %d, recordCount %d: %w", batch.ErrRecordCount, h.LastOffsetDelta, h.RecordCount, kerr.CorruptMessage)
	}
	if !cfg.LogAppendTime {
		now := time.Now().UnixMilli()
		if err := cfg.Timestamps.check(&h, now); err != nil {
			lo, hi := cfg.Timestamps.bounds(now)
			return res, timestampErrors(records, lo, hi, err)
		}
	}
	if cfg.Compaction.Compact {
		if err := checkKeys(records, p.Topic, p.ID); err != nil {
			return res, err
		}
	}
	if cfg.Recompress { // before the append lock: the codecs' work does not hold up other appends
		if records, err = recompress(records, cfg); err != nil {
			return res, err
		}
	}

	p.appendMu.Lock()
	if !p.IsLeader() {
		p.appendMu.Unlock()
		return res, fmt.Errorf("%s-%d is not led by this broker: %w", p.Topic, p.ID, kerr.NotLeaderForPartition)
	}
	if acks == -1 {
		if isr, min := len(p.ISR()), cfg.MinInsyncReplicas; isr < min {
			p.appendMu.Unlock()
			return res, fmt.Errorf("%s-%d has %d in-sync replicas, min.insync.replicas is %d: %w", p.Topic, p.ID, isr, min, kerr.NotEnoughReplicas)
		}
	}
	if guard != nil && h.Transactional() && !p.txns.verifiedLocked(h.ProducerID, *guard) {
		p.appendMu.Unlock()
		return res, fmt.Errorf("producer %d's transaction ended while it was verified: %w", h.ProducerID, kerr.InvalidTxnState)
	}
	if tv2 && h.Transactional() {
		if err := p.heldLocked(&h); err != nil {
			p.appendMu.Unlock()
			return res, err
		}
	}
	if h.Idempotent() {
		dup, err := p.producers.check(&h)
		if err != nil {
			p.appendMu.Unlock()
			return res, err
		}
		if dup != nil {
			p.appendMu.Unlock()
			res.BaseOffset, res.LastOffset, res.Duplicate = dup.baseOffset, dup.lastOffset, true
			res.LeaderEpoch = p.leaderEpoch.Load()
			return res, nil
		}
	}
	if cfg.LogAppendTime {
		res.LogAppendTime = time.Now().UnixMilli()
		batch.SetLogAppendTime(records, res.LogAppendTime)
	}
	r, err := p.appendLocked(records, &h)
	r.LogAppendTime = res.LogAppendTime
	return r, err
}

// appendLocked appends one checked batch whose header is h, notes it in the
// producer and transaction state, and releases appendMu, which the caller holds.
func (p *Partition) appendLocked(records []byte, h *batch.Header) (AppendResult, error) {
	res := AppendResult{LogAppendTime: -1, LeaderEpoch: p.leaderEpoch.Load()}
	err := p.epochs.saveUnsaved() // the log must not hold an epoch its checkpoint lacks
	var base int64
	if err == nil {
		base, err = p.log.Append(records, res.LeaderEpoch)
	}
	if err != nil {
		if !p.appendFailing {
			p.appendFailing = true // logged once per run of failures
			p.logger.Warn("appends refused by the disk (producers get KAFKA_STORAGE_ERROR); reads go on", "err", err)
		}
		p.appendMu.Unlock()
		return res, fmt.Errorf("append to %s-%d: %v: %w", p.Topic, p.ID, err, kerr.KafkaStorageError)
	}
	if p.appendFailing {
		p.appendFailing = false
		p.logger.Info("appends succeed again")
	}
	h.BaseOffset = base
	if err := p.observeLocked(h, records); err != nil {
		p.logger.Warn("transaction state of an appended batch", "offset", base, "err", err)
	}
	p.appendMu.Unlock()
	if p.cfg.Load().wantsSyncOnAppend() || p.log.NeedsSync() {
		p.requestSync()
	}

	res.BaseOffset, res.LastOffset = base, h.LastOffset()
	p.maybeAdvanceHW()
	p.notify()
	return res, nil
}

var decoders = sync.Pool{New: func() any { return new(batch.Decoder) }}

// Name names the replica's log: its folder name (compaction.Target).
func (p *Partition) Name() string { return PartitionKey(p.Topic, p.ID) }

// Log returns the replica's log (compaction.Target).
func (p *Partition) Log() *logstore.Log { return p.log }

// CompactionConfig returns the topic's compaction settings (compaction.Target).
func (p *Partition) CompactionConfig() compaction.Config { return p.cfg.Load().Compaction }

// LastProducerOffsets returns the last offset of the last batch of every
// idempotent producer this replica knows (compaction.Target): compaction keeps
// those batches.
func (p *Partition) LastProducerOffsets() map[int64]int64 {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	out := make(map[int64]int64, len(p.producers.m))
	for id, e := range p.producers.m {
		if n := len(e.batches); n > 0 {
			out[id] = e.batches[n-1].lastOffset
		}
	}
	return out
}

// Read returns whole batches from offset, up to maxBytes (the first batch always whole,
// KIP-74), never at or above the high watermark. The caller must Release the slice.
func (p *Partition) Read(offset, maxBytes int64) (*logstore.Slice, error) {
	if !p.IsLeader() {
		return nil, fmt.Errorf("%s-%d is not led by this broker: %w", p.Topic, p.ID, kerr.NotLeaderForPartition)
	}
	hw := p.hw.Load()
	if offset > p.log.LogEndOffset() || offset < p.log.LogStartOffset() {
		return nil, fmt.Errorf("offset %d outside [%d, %d]: %w", offset, p.log.LogStartOffset(), p.log.LogEndOffset(), kerr.OffsetOutOfRange)
	}
	if offset >= hw {
		return &logstore.Slice{NextOffset: offset}, nil
	}
	return p.read(offset, maxBytes, hw)
}

// ReadCommitted returns whole batches from offset below this replica's high
// watermark, whatever its role: a follower's committed records, for the applier of
// __consumer_offsets that keeps a follower's Pebble current. It never reads above the
// high watermark, which a follower never truncates below.
func (p *Partition) ReadCommitted(offset, maxBytes int64) (*logstore.Slice, error) {
	hw := p.hw.Load()
	if offset >= hw {
		return &logstore.Slice{NextOffset: offset}, nil
	}
	if offset < p.log.LogStartOffset() {
		return nil, fmt.Errorf("offset %d before the log start %d: %w", offset, p.log.LogStartOffset(), kerr.OffsetOutOfRange)
	}
	return p.read(offset, maxBytes, hw)
}

func (p *Partition) read(offset, maxBytes, maxOffset int64) (*logstore.Slice, error) {
	s, err := p.log.Read(offset, maxBytes, maxOffset)
	if err != nil {
		if errors.Is(err, logstore.ErrOffsetOutOfRange) {
			return nil, fmt.Errorf("%v: %w", err, kerr.OffsetOutOfRange)
		}
		return nil, fmt.Errorf("read %s-%d: %v: %w", p.Topic, p.ID, err, kerr.KafkaStorageError)
	}
	return s, nil
}

// OffsetForTimestamp finds the first batch whose max timestamp is at or after ts and is
// below the high watermark.
func (p *Partition) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool, err error) {
	off, bts, ok, err := p.log.OffsetForTimestamp(ts)
	if err != nil {
		return 0, 0, false, fmt.Errorf("%v: %w", err, kerr.KafkaStorageError)
	}
	if !ok || off >= p.hw.Load() {
		return 0, 0, false, nil
	}
	return off, bts, true, nil
}

// MaxTimestampOffset answers ListOffsets' MAX_TIMESTAMP: the largest batch
// timestamp below the high watermark and the base offset of the first batch
// with it; ok is false on an empty log.
func (p *Partition) MaxTimestampOffset() (offset, timestamp int64, ok bool, err error) {
	ts := p.maxTimestampBelow(p.hw.Load())
	if ts < 0 {
		return 0, 0, false, nil
	}
	return p.OffsetForTimestamp(ts)
}

// maxTimestampBelow is the largest batch timestamp of the segments that start
// below end, -1 if none. The segment end falls in may hold a larger one above
// end (not yet replicated): OffsetForTimestamp then finds no batch below the
// high watermark, and MAX_TIMESTAMP answers none until it is replicated.
func (p *Partition) maxTimestampBelow(end int64) int64 {
	maxTs := int64(-1)
	for _, seg := range p.log.Segments() {
		if seg.Base < end {
			maxTs = max(maxTs, seg.MaxTimestamp)
		}
	}
	return maxTs
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the largest epoch at or below epoch
// that this replica knows and the offset where it ended (-1, -1 when unknown).
func (p *Partition) EndOffsetForEpoch(epoch int32) (int32, int64) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.epochs.endOffsetFor(epoch, p.log.LogEndOffset())
}

// WaitHighWatermark blocks until the high watermark passes offset (the record at
// offset is committed: on every in-sync replica), or this replica stops leading
// (NOT_LEADER_OR_FOLLOWER), or ctx ends. epoch is the leader epoch the record was
// appended in (AppendResult.LeaderEpoch): as in WaitAcked, the high watermark
// counts only while that leadership lasts, since a replica that lost it may have
// had the record truncated and replaced. A negative epoch waits for what is in
// the log whichever leadership wrote it.
func (p *Partition) WaitHighWatermark(ctx context.Context, epoch int32, offset int64) error {
	ch := make(chan struct{}, 1)
	registered := false
	defer func() {
		if registered {
			p.RemoveWaiter(ch)
		}
	}()
	for {
		committed := p.hw.Load() > offset
		// Read after the high watermark (see WaitAcked).
		led := p.IsLeader() && (epoch < 0 || p.leaderEpoch.Load() == epoch)
		switch {
		case committed && (led || epoch < 0):
			return nil
		case !led:
			return fmt.Errorf("%s-%d stopped leading (epoch %d) before offset %d was committed: %w", p.Topic, p.ID, epoch, offset, kerr.NotLeaderForPartition)
		case !registered:
			p.AddWaiter(ch)
			registered = true
			continue // look again: the state may have moved before the waiter was added
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for offset %d of %s-%d to be committed: %w", offset, p.Topic, p.ID, ctx.Err())
		}
	}
}

// AddWaiter registers ch to receive a (non-blocking) send whenever the log end, the
// high watermark or the leadership moves. Fetches and acks=all produces park on it.
func (p *Partition) AddWaiter(ch chan<- struct{}) {
	p.waitMu.Lock()
	p.waiters[ch] = struct{}{}
	p.waitMu.Unlock()
}

// RemoveWaiter undoes AddWaiter.
func (p *Partition) RemoveWaiter(ch chan<- struct{}) {
	p.waitMu.Lock()
	delete(p.waiters, ch)
	p.waitMu.Unlock()
}

// AddReplicaWaiter is AddWaiter for a follower's parked fetch: it is not woken
// when only the high watermark or a follower's log start moves (notifyCommitted).
// A follower's fetch waits for records, and its next answer carries the high
// watermark anyway; waking it for every move, as each other follower's fetch
// moves it, only made it read nothing and park again.
func (p *Partition) AddReplicaWaiter(ch chan<- struct{}) {
	p.waitMu.Lock()
	p.replicaWaiters[ch] = struct{}{}
	p.waitMu.Unlock()
}

// RemoveReplicaWaiter undoes AddReplicaWaiter.
func (p *Partition) RemoveReplicaWaiter(ch chan<- struct{}) {
	p.waitMu.Lock()
	delete(p.replicaWaiters, ch)
	p.waitMu.Unlock()
}

// notify wakes every waiter: the log end, the leadership or the log start moved.
func (p *Partition) notify() {
	p.waitMu.Lock()
	wakeAll(p.waiters)
	wakeAll(p.replicaWaiters)
	p.waitMu.Unlock()
}

// notifyCommitted wakes the waiters on the high watermark or the followers' log
// starts (acks=all produces, consumers' fetches, DeleteRecords), not parked
// follower fetches.
func (p *Partition) notifyCommitted() {
	p.waitMu.Lock()
	wakeAll(p.waiters)
	p.waitMu.Unlock()
}

func wakeAll(waiters map[chan<- struct{}]struct{}) {
	for ch := range waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Size is the partition's bytes on disk.
func (p *Partition) Size() int64 { return p.log.Size() }

func (p *Partition) applyRetention(now time.Time) error {
	n, err := p.log.ApplyRetention(now)
	if n > 0 {
		p.forgetAbortedBefore(p.log.LogStartOffset())
		p.logger.Info("retention deleted segments", "segments", n, "log_start_offset", p.log.LogStartOffset())
	}
	return err
}

// checkpointHW writes the high watermark when it moved since the last checkpoint.
func (p *Partition) checkpointHW() error {
	hw := p.hw.Load()
	if hw == p.savedHW {
		return nil
	}
	p.snap.storeMu.Lock()
	defer p.snap.storeMu.Unlock()
	if p.snap.deleted {
		return nil
	}
	if err := p.store.SetHighWatermark(hw); err != nil {
		return err
	}
	p.savedHW = hw
	return nil
}

func (p *Partition) close() error {
	p.stopSyncer()
	return errors.Join(p.checkpointHW(), p.snapshotProducers(), p.log.Close())
}

func (p *Partition) delete() error {
	p.leader.Store(false)
	p.notify() // produces and fetches waiting on it answer now
	p.stopSyncer()
	// A snapshot or checkpoint writing now finishes before the Store's entries
	// go; any later one writes nothing.
	p.snap.storeMu.Lock()
	p.snap.deleted = true
	p.snap.storeMu.Unlock()
	return p.log.Delete()
}
