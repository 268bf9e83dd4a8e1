// Package sharegroup serves share groups (KIP-932): queues over Kafka topics,
// where the members of a group share the records of a partition, each record
// acquired by one member with a lock, then acknowledged (accepted, released or
// rejected) and delivered again when released or when its lock ends, until its
// delivery count reaches the limit.
//
// Two roles, on two nodes in general:
//   - the group coordinator of a share group (Coordinator), on the leader of the
//     group's __consumer_offsets partition, as for classic groups: membership
//     (ShareGroupHeartbeat), assignment (every member is assigned every partition
//     of the topics it subscribes to, so many members share one partition) and
//     ShareGroupDescribe. Membership is kept in the group's __consumer_offsets
//     partition (records.go) and loaded by the next coordinator after a failover.
//   - the share-partition (Manager), on the leader of each topic partition: the
//     in-flight window between the start offset (SPSO) and end offset (SPEO), the
//     share sessions, ShareFetch and ShareAcknowledge.
//
// Durability: every change of a window is written as the whole window to the
// replicated internal topic __share_group_state (Store; docs/format/share-state.md);
// an acknowledgement is answered once its write is acknowledged by every in-sync
// replica. A new leader of the topic partition loads the last state written: what
// was acknowledged stays done, and what the old leader had acquired is available
// again, with its delivery count.
package sharegroup

import (
	"context"
	"log/slog"
	"time"
)

// Defaults of the broker settings, Kafka's.
const (
	DefaultRecordLockDuration = 30 * time.Second // group.share.record.lock.duration.ms
	DefaultDeliveryCountLimit = 5                // group.share.delivery.count.limit
	DefaultMaxRecordLocks     = 2000             // group.share.partition.max.record.locks
	DefaultHeartbeatInterval  = 5 * time.Second  // group.share.heartbeat.interval.ms
	DefaultSessionTimeout     = 45 * time.Second // group.share.session.timeout.ms
	// The bounds of a group's share.session.timeout.ms and
	// share.heartbeat.interval.ms: group.share.min/max.session.timeout.ms and
	// group.share.min/max.heartbeat.interval.ms.
	DefaultMinSessionTimeout    = 45 * time.Second
	DefaultMaxSessionTimeout    = 60 * time.Second
	DefaultMinHeartbeatInterval = 5 * time.Second
	DefaultMaxHeartbeatInterval = 15 * time.Second
)

// Settings are one group's effective share settings: the broker's, overridden by
// the group's configs.
type Settings struct {
	AutoOffsetReset    string // share.auto.offset.reset: "latest" or "earliest"
	RecordLockDuration time.Duration
	DeliveryCountLimit int16
	MaxRecordLocks     int
	// SessionTimeout and HeartbeatInterval: share.session.timeout.ms and
	// share.heartbeat.interval.ms.
	SessionTimeout, HeartbeatInterval time.Duration
	// DeadLetterTopic is errors.deadletterqueue.topic.name (KIP-1191); "" drops
	// archived records, as Kafka does.
	DeadLetterTopic string
}

// Store keeps share-partition states durably.
type Store interface {
	// Load returns the last state saved for key, ok false when there is none.
	Load(ctx context.Context, key Key) (st State, ok bool, err error)
	// Save writes st for key, returning once it is durable.
	Save(ctx context.Context, key Key, st State) error
}

// Config configures a Manager and a Coordinator. Zero values take the defaults.
type Config struct {
	// Store keeps the share-partition states (required for a Manager).
	Store Store
	// MemberLog keeps the membership of share groups (a Coordinator's); nil:
	// in memory only.
	MemberLog MemberLog
	// RecordLockDuration, DeliveryCountLimit, MaxRecordLocks: the broker's
	// group.share.* settings (defaults above).
	RecordLockDuration time.Duration
	DeliveryCountLimit int16
	MaxRecordLocks     int
	// HeartbeatInterval and SessionTimeout: group.share.heartbeat.interval.ms and
	// group.share.session.timeout.ms.
	HeartbeatInterval, SessionTimeout time.Duration
	// MinSessionTimeout, MaxSessionTimeout, MinHeartbeatInterval and
	// MaxHeartbeatInterval bound a group's share.session.timeout.ms and
	// share.heartbeat.interval.ms (group.share.min/max.*).
	MinSessionTimeout, MaxSessionTimeout, MinHeartbeatInterval, MaxHeartbeatInterval time.Duration
	// GroupConfigs returns a group's config overrides (share.auto.offset.reset,
	// share.record.lock.duration.ms, share.delivery.count.limit,
	// errors.deadletterqueue.topic.name); nil: none.
	GroupConfigs func(group string) map[string]string
	// DeadLetter copies archived records to a dead-letter topic, returning once
	// they are written; nil: archived records are dropped.
	DeadLetter func(ctx context.Context, group, topic string, partition int32, log Log, recs []Archived, dlq string) error
	// StoreTimeout bounds one load or write of the store (default 10 s).
	StoreTimeout time.Duration
	// Clock returns the time (default time.Now).
	Clock func() time.Time
	// Logger receives log lines (default: discard).
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.RecordLockDuration <= 0 {
		c.RecordLockDuration = DefaultRecordLockDuration
	}
	if c.DeliveryCountLimit <= 0 {
		c.DeliveryCountLimit = DefaultDeliveryCountLimit
	}
	if c.MaxRecordLocks <= 0 {
		c.MaxRecordLocks = DefaultMaxRecordLocks
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&c.MinSessionTimeout, DefaultMinSessionTimeout}, {&c.MaxSessionTimeout, DefaultMaxSessionTimeout},
		{&c.MinHeartbeatInterval, DefaultMinHeartbeatInterval}, {&c.MaxHeartbeatInterval, DefaultMaxHeartbeatInterval},
	} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if c.StoreTimeout <= 0 {
		c.StoreTimeout = 10 * time.Second
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Group config names (KIP-932, KIP-1191).
const (
	ConfigAutoOffsetReset    = "share.auto.offset.reset"
	ConfigRecordLockDuration = "share.record.lock.duration.ms"
	ConfigDeliveryCountLimit = "share.delivery.count.limit"
	ConfigDeadLetterTopic    = "errors.deadletterqueue.topic.name"
	ConfigSessionTimeout     = "share.session.timeout.ms"
	ConfigHeartbeatInterval  = "share.heartbeat.interval.ms"
)

// settings resolves a group's settings.
func (c *Config) settings(group string) Settings {
	s := Settings{
		AutoOffsetReset:    "latest",
		RecordLockDuration: c.RecordLockDuration,
		DeliveryCountLimit: c.DeliveryCountLimit,
		MaxRecordLocks:     c.MaxRecordLocks,
		SessionTimeout:     c.SessionTimeout,
		HeartbeatInterval:  c.HeartbeatInterval,
	}
	if c.GroupConfigs == nil {
		return s
	}
	cfg := c.GroupConfigs(group)
	if v, ok := cfg[ConfigAutoOffsetReset]; ok {
		s.AutoOffsetReset = v
	}
	if v, ok := parseInt(cfg[ConfigRecordLockDuration]); ok && v > 0 {
		s.RecordLockDuration = time.Duration(v) * time.Millisecond
	}
	if v, ok := parseInt(cfg[ConfigDeliveryCountLimit]); ok && v > 0 && v < 1<<15 {
		s.DeliveryCountLimit = int16(v)
	}
	s.DeadLetterTopic = cfg[ConfigDeadLetterTopic]
	if v, ok := parseInt(cfg[ConfigSessionTimeout]); ok && v > 0 {
		s.SessionTimeout = time.Duration(v) * time.Millisecond
	}
	if v, ok := parseInt(cfg[ConfigHeartbeatInterval]); ok && v > 0 {
		s.HeartbeatInterval = time.Duration(v) * time.Millisecond
	}
	return s
}

func parseInt(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' || n > 1<<40 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// deadLetter copies archived records to the group's dead-letter topic, if it has
// one, and waits for the copies. A failed copy is logged: the records stay
// archived.
func (m *Manager) deadLetter(ctx context.Context, sp *sharePartition, recs []Archived) {
	if len(recs) == 0 || m.cfg.DeadLetter == nil {
		return
	}
	dlq := m.groupSettings(sp.key.Group).DeadLetterTopic
	if dlq == "" {
		return
	}
	if err := m.cfg.DeadLetter(ctx, sp.key.Group, sp.topic, sp.key.Partition, sp.log, recs, dlq); err != nil {
		m.logger.Warn("dead-letter copy failed; the records are archived without it",
			"group", sp.key.Group, "topic", sp.topic, "partition", sp.key.Partition, "dead_letter_topic", dlq, "records", len(recs), "err", err)
	}
}

// deadLetterLater copies archived records in the background (records archived
// by a lock that ended, outside any request).
func (m *Manager) deadLetterLater(sp *sharePartition, recs []Archived) {
	if len(recs) == 0 {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.StoreTimeout)
		defer cancel()
		m.deadLetter(ctx, sp, recs)
	}()
}
