package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/internal/batch"
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
}

// AppendResult is what a producer is told about an appended batch.
type AppendResult struct {
	BaseOffset int64
	// LogAppendTime is the broker's timestamp for LogAppendTime topics, else -1.
	LogAppendTime int64
	// Duplicate is set when the batch was a retry of one already in the log: nothing
	// was appended and BaseOffset is the original one.
	Duplicate bool
}

// Partition is the local replica of one topic partition. On a single node it always
// leads: its high watermark is its log end offset.
//
// Lock order: appendMu, then waitMu. Neither is held while calling out of the package.
type Partition struct {
	Topic   string
	ID      int32
	TopicID [16]byte

	log    *logstore.Log
	logger *slog.Logger
	cfg    atomic.Pointer[PartitionConfig]

	leaderEpoch  atomic.Int32
	leader       atomic.Bool // the partition state names this broker as leader
	fenced       atomic.Bool // the broker has no session: it must not lead
	sessionValid func() bool // the broker's lease is certainly alive
	hw           atomic.Int64

	appendMu  sync.Mutex
	producers producerStates // guarded by appendMu

	waitMu  sync.Mutex
	waiters map[chan<- struct{}]struct{} // guarded by waitMu
}

func openPartition(dir, topic string, id int32, topicID [16]byte, cfg PartitionConfig, idx logstore.Index, logger *slog.Logger) (*Partition, error) {
	l, err := logstore.Open(dir, cfg.Log, idx)
	if err != nil {
		return nil, err
	}
	p := &Partition{
		Topic:     topic,
		ID:        id,
		TopicID:   topicID,
		log:       l,
		logger:    logger.With("topic", topic, "partition", id),
		producers: newProducerStates(),
		waiters:   make(map[chan<- struct{}]struct{}),
	}
	p.cfg.Store(&cfg)
	// Idempotent producers' state is rebuilt from the batch headers in the log.
	if err := l.ScanHeaders(l.LogStartOffset(), func(h batch.Header) error {
		p.producers.record(&h)
		return nil
	}); err != nil {
		l.Close()
		return nil, fmt.Errorf("rebuild producer state of %s-%d: %w", topic, id, err)
	}
	p.hw.Store(l.LogEndOffset())
	return p, nil
}

// SetConfig replaces the partition's settings (topic configs changed).
func (p *Partition) SetConfig(cfg PartitionConfig) { p.cfg.Store(&cfg) }

// LeaderEpoch is the epoch of the current leadership of this partition.
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch.Load() }

// IsLeader reports whether this replica leads: the partition state names this broker
// and the broker holds its session.
func (p *Partition) IsLeader() bool {
	return p.leader.Load() && !p.fenced.Load() && (p.sessionValid == nil || p.sessionValid())
}

func (p *Partition) setLeadership(s PartitionSpec, self int32) {
	p.leaderEpoch.Store(s.LeaderEpoch)
	p.leader.Store(s.Leader == self)
}

// HighWatermark is the offset below which records are committed and visible to consumers.
func (p *Partition) HighWatermark() int64 { return p.hw.Load() }

// LogStartOffset is the first offset still in the log.
func (p *Partition) LogStartOffset() int64 { return p.log.LogStartOffset() }

// LogEndOffset is the offset the next appended record gets.
func (p *Partition) LogEndOffset() int64 { return p.log.LogEndOffset() }

// Append validates one produced batch and appends it. Errors wrap a *kerr.Error that
// names the Kafka error code for the producer; nothing is appended when one is returned.
func (p *Partition) Append(records []byte) (AppendResult, error) {
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
	if h.Transactional() {
		return res, fmt.Errorf("transactions are not supported: %w", kerr.InvalidTxnState)
	}
	if h.RecordCount == 0 {
		return res, fmt.Errorf("empty batch: %w", kerr.InvalidRecord)
	}

	p.appendMu.Lock()
	if !p.IsLeader() {
		p.appendMu.Unlock()
		return res, fmt.Errorf("%s-%d is not led by this broker: %w", p.Topic, p.ID, kerr.NotLeaderForPartition)
	}
	if h.Idempotent() {
		dup, err := p.producers.check(&h)
		if err != nil {
			p.appendMu.Unlock()
			return res, err
		}
		if dup != nil {
			p.appendMu.Unlock()
			res.BaseOffset, res.Duplicate = dup.baseOffset, true
			return res, nil
		}
	}
	if cfg.LogAppendTime {
		res.LogAppendTime = time.Now().UnixMilli()
		batch.SetLogAppendTime(records, res.LogAppendTime)
	}
	base, err := p.log.Append(records, p.leaderEpoch.Load())
	if err != nil {
		p.appendMu.Unlock()
		return res, fmt.Errorf("append to %s-%d: %v: %w", p.Topic, p.ID, err, kerr.KafkaStorageError)
	}
	h.BaseOffset = base
	p.producers.record(&h)
	p.hw.Store(h.NextOffset())
	p.appendMu.Unlock()

	res.BaseOffset = base
	p.notify()
	return res, nil
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
	s, err := p.log.Read(offset, maxBytes, hw)
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

// WaitHighWatermark blocks until the high watermark passes offset (the record at
// offset is committed: on every in-sync replica) or ctx ends. On a single node the
// high watermark is the log end offset, so an appended record is committed at once;
// ISR replication makes this wait for followers.
func (p *Partition) WaitHighWatermark(ctx context.Context, offset int64) error {
	if p.hw.Load() > offset {
		return nil
	}
	ch := make(chan struct{}, 1)
	p.AddWaiter(ch)
	defer p.RemoveWaiter(ch)
	for p.hw.Load() <= offset {
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for offset %d of %s-%d to be committed: %w", offset, p.Topic, p.ID, ctx.Err())
		}
	}
	return nil
}

// AddWaiter registers ch to receive a (non-blocking) send whenever the high watermark
// moves. Fetch requests that wait for data park on it.
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

func (p *Partition) notify() {
	p.waitMu.Lock()
	for ch := range p.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	p.waitMu.Unlock()
}

// Size is the partition's bytes on disk.
func (p *Partition) Size() int64 { return p.log.Size() }

func (p *Partition) applyRetention(now time.Time) error {
	n, err := p.log.ApplyRetention(now)
	if n > 0 {
		p.logger.Info("retention deleted segments", "segments", n, "log_start_offset", p.log.LogStartOffset())
	}
	return err
}

func (p *Partition) close() error { return p.log.Close() }

func (p *Partition) delete() error { return p.log.Delete() }
