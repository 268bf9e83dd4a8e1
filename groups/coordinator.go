// Package groups is the group coordinator for Kafka's classic consumer-group
// protocol: group membership (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), KIP-848
// consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe; consumer.go), committed
// offsets (OffsetCommit, OffsetFetch, OffsetDelete) and group administration
// (DescribeGroups, ListGroups, DeleteGroups).
//
// A group belongs to one partition of the internal topic __consumer_offsets,
// PartitionFor(group); the node leading that partition coordinates the group. The
// appliance tells the Coordinator which partitions it leads (Elect) and which it no
// longer does (Resign). Requests for groups of other partitions get NOT_COORDINATOR.
//
// Storage: every commit and every group metadata change is appended as a record to
// the group's __consumer_offsets partition (Kafka's record formats, see
// docs/format/offsets.md) and is acknowledged once the record is committed and
// applied to the node's Pebble database (package offsets), which answers
// OffsetFetch. A shard's applier applies the log in order, so the log is the source
// of truth and Pebble its index: on Elect, Pebble is brought up to date from the
// last applied offset it records, and groups are loaded from it.
//
// Membership lives in memory, per group, with the state machine Empty ->
// PreparingRebalance -> CompletingRebalance -> Stable (and Dead for a group that was
// removed). JoinGroup and SyncGroup replies are held until the rebalance completes;
// the handler's goroutine waits for them.
//
// Lock order: group.mu, then Coordinator.mu; group.mu, then shard.appendMu.
// Coordinator.mu, then the share coordinator's map lock (LoadShareGroups).
// shard.mu is taken alone. No lock is held while waiting for a record to be applied.
package groups

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/internal/follow"
	"skiff/logstore"
	"skiff/offsets"
	"skiff/replication"
)

// Defaults of Config, shared with the broker's settings table (appliance).
const (
	DefaultMinSessionTimeout      = 6 * time.Second    // group.min.session.timeout.ms
	DefaultMaxSessionTimeout      = 30 * time.Minute   // group.max.session.timeout.ms
	DefaultInitialRebalanceDelay  = 3 * time.Second    // group.initial.rebalance.delay.ms
	DefaultMaxGroupSize           = 1000               // group.max.size; Kafka's is unbounded
	DefaultOffsetsRetention       = 7 * 24 * time.Hour // offsets.retention.minutes
	DefaultRetentionCheckInterval = 10 * time.Minute   // offsets.retention.check.interval.ms
)

// Config configures a Coordinator. Zero values take the documented defaults.
type Config struct {
	// DB is the node's Pebble database (required).
	DB *offsets.DB
	// TopicPartitions returns the partition count of a topic, ok false if it does
	// not exist; OffsetCommit refuses other partitions with
	// UNKNOWN_TOPIC_OR_PARTITION. Default: every partition is accepted.
	TopicPartitions func(topic string) (int32, bool)
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a member may
	// ask for (group.min.session.timeout.ms and group.max.session.timeout.ms,
	// defaults DefaultMinSessionTimeout and DefaultMaxSessionTimeout): others get
	// INVALID_SESSION_TIMEOUT.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: how long a rebalance
	// of an empty group waits for more members; for a new group (generation 0) the
	// wait is extended by another delay while members keep joining, up to the
	// rebalance timeout, as in Kafka (default DefaultInitialRebalanceDelay;
	// negative: no delay).
	InitialRebalanceDelay time.Duration
	// MaxGroupSize is group.max.size: members plus members yet to rejoin
	// (default DefaultMaxGroupSize). Kafka's default is unbounded; held JoinGroup
	// requests cost memory and goroutines, so Skiff bounds them.
	MaxGroupSize int
	// OffsetsRetention is offsets.retention.minutes: the committed offsets of a group
	// are deleted once it has been empty this long (a group that never had members:
	// once each offset is this old). Default DefaultOffsetsRetention.
	OffsetsRetention time.Duration
	// RetentionCheckInterval is offsets.retention.check.interval.ms (default
	// DefaultRetentionCheckInterval).
	RetentionCheckInterval time.Duration
	// MaxMetadataBytes is offset.metadata.max.bytes: longer commit metadata gets
	// OFFSET_METADATA_TOO_LARGE (default 4096).
	MaxMetadataBytes int
	// CommitTimeout is offsets.commit.timeout.ms: how long a commit, an assignment
	// or a deletion waits for its record to be committed and applied before the
	// request gets REQUEST_TIMED_OUT (default 5 s).
	CommitTimeout time.Duration
	// Topics lists the cluster's topics (internal ones included) for the
	// assignments and regex subscriptions of KIP-848 consumer groups. Default: none.
	Topics func() []TopicMeta
	// ConsumerSessionTimeout is group.consumer.session.timeout.ms: a consumer group
	// member silent this long is removed (default DefaultConsumerSessionTimeout).
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is group.consumer.heartbeat.interval.ms, told to
	// consumer group members (default DefaultConsumerHeartbeatInterval).
	ConsumerHeartbeatInterval time.Duration
	// ConsumerMinSessionTimeout and ConsumerMaxSessionTimeout bound a group's
	// consumer.session.timeout.ms (group.consumer.min/max.session.timeout.ms;
	// defaults DefaultConsumerMinSessionTimeout and DefaultConsumerMaxSessionTimeout,
	// widened to hold ConsumerSessionTimeout).
	ConsumerMinSessionTimeout, ConsumerMaxSessionTimeout time.Duration
	// ConsumerMinHeartbeatInterval and ConsumerMaxHeartbeatInterval bound a group's
	// consumer.heartbeat.interval.ms (group.consumer.min/max.heartbeat.interval.ms,
	// defaults likewise).
	ConsumerMinHeartbeatInterval, ConsumerMaxHeartbeatInterval time.Duration
	// GroupConfigs returns a group's config overrides (the GROUP config resource;
	// groupconfigs.go reads consumer.session.timeout.ms and
	// consumer.heartbeat.interval.ms). Default: none.
	GroupConfigs func(group string) map[string]string
	// ConsumerAssignors is group.consumer.assignors: the server-side assignors a
	// member may ask for, the first being the default (default
	// DefaultConsumerAssignors; names other than "uniform" and "range" are refused by
	// the settings).
	ConsumerAssignors []string
	// ConsumerMigrationPolicy is group.consumer.migration.policy: whether classic
	// groups turn into consumer groups (upgrade) and back (downgrade) while they
	// have members; one of MigrationPolicies (default
	// DefaultConsumerMigrationPolicy).
	ConsumerMigrationPolicy string
	// Clock is the time source (default: the system clock).
	Clock Clock
	// Logger receives the coordinator's log lines (default: discard).
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.MinSessionTimeout <= 0 {
		c.MinSessionTimeout = DefaultMinSessionTimeout
	}
	if c.MaxSessionTimeout <= 0 {
		c.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if c.InitialRebalanceDelay == 0 {
		c.InitialRebalanceDelay = DefaultInitialRebalanceDelay
	} else if c.InitialRebalanceDelay < 0 {
		c.InitialRebalanceDelay = 0
	}
	if c.MaxGroupSize <= 0 {
		c.MaxGroupSize = DefaultMaxGroupSize
	}
	if c.OffsetsRetention <= 0 {
		c.OffsetsRetention = DefaultOffsetsRetention
	}
	if c.RetentionCheckInterval <= 0 {
		c.RetentionCheckInterval = DefaultRetentionCheckInterval
	}
	if c.MaxMetadataBytes <= 0 {
		c.MaxMetadataBytes = 4096
	}
	if c.CommitTimeout <= 0 {
		c.CommitTimeout = 5 * time.Second
	}
	if c.ConsumerSessionTimeout <= 0 {
		c.ConsumerSessionTimeout = DefaultConsumerSessionTimeout
	}
	if c.ConsumerHeartbeatInterval <= 0 {
		c.ConsumerHeartbeatInterval = DefaultConsumerHeartbeatInterval
	}
	bound := func(d *time.Duration, def, v time.Duration, lower bool) {
		if *d <= 0 {
			*d = def
		}
		if lower {
			*d = min(*d, v)
		} else {
			*d = max(*d, v)
		}
	}
	bound(&c.ConsumerMinSessionTimeout, DefaultConsumerMinSessionTimeout, c.ConsumerSessionTimeout, true)
	bound(&c.ConsumerMaxSessionTimeout, DefaultConsumerMaxSessionTimeout, c.ConsumerSessionTimeout, false)
	bound(&c.ConsumerMinHeartbeatInterval, DefaultConsumerMinHeartbeatInterval, c.ConsumerHeartbeatInterval, true)
	bound(&c.ConsumerMaxHeartbeatInterval, DefaultConsumerMaxHeartbeatInterval, c.ConsumerHeartbeatInterval, false)
	if c.ConsumerMigrationPolicy == "" {
		c.ConsumerMigrationPolicy = DefaultConsumerMigrationPolicy
	}
	if len(c.ConsumerAssignors) == 0 {
		c.ConsumerAssignors = DefaultConsumerAssignors
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Log is the replica of a __consumer_offsets partition that a shard appends to and
// applies from: a *replication.Partition.
type Log interface {
	Append(batch []byte, acks int16) (replication.AppendResult, error)
	// AppendFromCoordinator appends a transactional batch of TxnOffsetCommit records.
	AppendFromCoordinator(batch []byte) (replication.AppendResult, error)
	// TxnVerification and AppendFromCoordinatorVerified are KIP-890 part 1's
	// check that a TxnOffsetCommit's batch does not open a transaction its
	// coordinator does not know (see replication.Partition).
	TxnVerification(producerID int64) (guard uint64, needed bool)
	AppendFromCoordinatorVerified(batch []byte, guard uint64) (replication.AppendResult, error)
	// AwaitPreviousMarker and AppendFromCoordinatorTV2 append the batch of a
	// transaction version 2 producer (TxnOffsetCommit v5) after the marker of
	// its previous transaction (see replication.Partition).
	AwaitPreviousMarker(ctx context.Context, producerID int64, epoch int16) error
	AppendFromCoordinatorTV2(batch []byte) (replication.AppendResult, error)
	HighWatermark() int64
	// IsLeader and LeaderEpoch tell whether the replica still leads in the
	// shard's epoch: its high watermark counts for the shard only then.
	IsLeader() bool
	LeaderEpoch() int32
	LogStartOffset() int64
	LogEndOffset() int64
	Read(offset, maxBytes int64) (*logstore.Slice, error)
	AddWaiter(ch chan<- struct{})
	RemoveWaiter(ch chan<- struct{})
}

var _ Log = (*replication.Partition)(nil)

// Client identifies the connection a request came from.
type Client struct {
	ID   string // the request header's client id
	Host string // the client's address, "/" + IP as Kafka reports it

	// MayDescribe reports whether the client's principal may DESCRIBE a topic,
	// as the ACLs are when it is called; nil without an authorizer. A KIP-848
	// member's regex matches only such topics (Kafka's KAFKA-18813).
	MayDescribe func(topic string) bool
}

// errNotCoordinator: the shard was resigned, or its leader epoch ended, while a
// request waited on it.
var errNotCoordinator = errors.New("groups: no longer the coordinator of this group")

// Coordinator is the group coordinator of one node.
type Coordinator struct {
	cfg    Config
	logger *slog.Logger
	clock  Clock

	partitions atomic.Int32 // of __consumer_offsets; 0 until known
	// offsetsRetention and checkInterval are Config's OffsetsRetention and
	// RetentionCheckInterval, which SetOffsetsRetention changes.
	offsetsRetention, checkInterval atomic.Int64

	expiryMu sync.Mutex // held while expiry runs; Close waits for it

	mu struct {
		sync.Mutex
		shards map[int32]*shard
		groups map[string]*group
		expiry Timer
		closed bool
		// shareGroups loads the share groups of the partitions led here.
		shareGroups ShareGroups
	}
	followers follow.Appliers[FollowLog] // partitions followed here (follow.go)
}

// New returns a coordinator that leads no partition yet.
func New(cfg Config) *Coordinator {
	cfg.setDefaults()
	c := &Coordinator{cfg: cfg, logger: cfg.Logger, clock: cfg.Clock}
	c.offsetsRetention.Store(int64(cfg.OffsetsRetention))
	c.checkInterval.Store(int64(cfg.RetentionCheckInterval))
	c.mu.shards = make(map[int32]*shard)
	c.followers.Apply = c.applyFollowed
	c.followers.Retry = retryApply
	c.mu.groups = make(map[string]*group)
	c.mu.expiry = c.clock.AfterFunc(cfg.RetentionCheckInterval, c.expiryTick)
	return c
}

// SetOffsetsRetention changes offsets.retention.minutes and
// offsets.retention.check.interval.ms while the coordinator runs (values that are
// not positive keep the current ones); a new interval counts from now.
func (c *Coordinator) SetOffsetsRetention(retention, checkInterval time.Duration) {
	if retention > 0 {
		c.offsetsRetention.Store(int64(retention))
	}
	if checkInterval <= 0 || c.checkInterval.Swap(int64(checkInterval)) == int64(checkInterval) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.mu.closed {
		stopTimer(c.mu.expiry) // every new timer replaces the pending one: one chain of ticks
		c.mu.expiry = c.clock.AfterFunc(checkInterval, c.expiryTick)
	}
}

// PartitionFor returns the __consumer_offsets partition of group when the topic has
// n partitions: Kafka's abs(group.hashCode()) % n, with Java's String.hashCode over
// UTF-16 code units, so that a group lands where Kafka would put it.
func PartitionFor(group string, n int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 { // Kafka's Utils.abs
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}

// SetOffsetsTopic tells the coordinator the partition count of __consumer_offsets,
// which routes groups to partitions.
func (c *Coordinator) SetOffsetsTopic(partitions int32) {
	c.partitions.Store(partitions)
}

// Elect makes this node the coordinator of the groups of __consumer_offsets
// partition id, whose local replica leads in leader epoch epoch. The shard is
// brought up to date from the log and its groups are loaded in the background;
// requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS. A partition whose log and
// Pebble state are both empty (one just created) has nothing to load: it is
// served at once, so that the first requests of a new cluster do not see the
// load (the loaded state is the empty state either way). Electing a partition already
// led with the same log and epoch does nothing; a new epoch reloads the shard (the
// log may have changed under another leader).
func (c *Coordinator) Elect(id, epoch int32, log Log) {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return
	}
	old := c.mu.shards[id]
	if old != nil && old.log == log && old.epoch == epoch {
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	if old != nil {
		c.Resign(id)
	}
	c.Unfollow(id) // one writer of the partition's Pebble state at a time
	sh := newShard(c, id, log)
	sh.epoch = epoch
	empty := sh.empty()
	c.mu.Lock()
	if c.mu.closed || c.mu.shards[id] != nil {
		c.mu.Unlock()
		return
	}
	if empty {
		// Nothing to apply and no group to load: served from the moment it is
		// led, as the load would find (under c.mu, as load gives the share
		// groups theirs).
		sh.ready.Store(true)
		if c.mu.shareGroups != nil {
			c.mu.shareGroups.LoadShareGroups(id, nil)
		}
	}
	c.mu.shards[id] = sh
	c.mu.Unlock()
	c.logger.Debug("group coordinator: loading offsets partition", "partition", id, "leader_epoch", epoch, "empty", empty)
	go sh.run()
}

// Resign stops coordinating the groups of partition id: requests held or waiting on
// them get NOT_COORDINATOR, and their state is dropped from memory (it stays in the
// log and in Pebble). It returns once the shard no longer touches its log.
func (c *Coordinator) Resign(id int32) {
	c.mu.Lock()
	sh := c.mu.shards[id]
	if sh == nil {
		c.mu.Unlock()
		return
	}
	delete(c.mu.shards, id)
	var gs []*group
	for name, g := range c.mu.groups {
		if g.sh == sh {
			gs = append(gs, g)
			delete(c.mu.groups, name)
		}
	}
	c.mu.Unlock()
	sh.stop()
	for _, g := range gs {
		g.mu.Lock()
		g.unloadLocked(kerr.NotCoordinator.Code)
		g.mu.Unlock()
	}
	if sg := c.shareLoader(); sg != nil {
		sg.DropShareGroups(id)
	}
	c.logger.Debug("group coordinator: resigned offsets partition", "partition", id)
}

// Led returns the partitions this node coordinates (loaded or loading), in order.
func (c *Coordinator) Led() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int32, 0, len(c.mu.shards))
	for id := range c.mu.shards {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Close resigns every partition and stops the expiry timer. It is idempotent.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil
	}
	c.mu.closed = true
	stopTimer(c.mu.expiry)
	ids := make([]int32, 0, len(c.mu.shards))
	for id := range c.mu.shards {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	c.expiryMu.Lock() // wait for an expiry run in progress
	c.expiryMu.Unlock()
	for _, id := range ids {
		c.Resign(id)
	}
	c.followers.Close()
	return nil
}

// shardFor returns the loaded shard of group, or the error code to answer.
func (c *Coordinator) shardFor(group string) (*shard, int16) {
	n := c.partitions.Load()
	if n <= 0 {
		return nil, kerr.NotCoordinator.Code
	}
	c.mu.Lock()
	sh := c.mu.shards[PartitionFor(group, n)]
	c.mu.Unlock()
	switch {
	case sh == nil, sh.isDeposed():
		return nil, kerr.NotCoordinator.Code
	case !sh.ready.Load():
		return nil, kerr.CoordinatorLoadInProgress.Code
	}
	return sh, 0
}

// lockGroup returns group name locked, creating an Empty group if create is set.
// g is nil (and code 0) when the group does not exist and create is false; code is
// set when this node does not coordinate it.
func (c *Coordinator) lockGroup(name string, create bool) (g *group, code int16) {
	for range 100 {
		sh, code := c.shardFor(name)
		if code != 0 {
			return nil, code
		}
		c.mu.Lock()
		if c.mu.shards[sh.id] != sh {
			c.mu.Unlock()
			continue
		}
		g = c.mu.groups[name]
		if g == nil {
			if !create {
				c.mu.Unlock()
				return nil, 0
			}
			g = newGroup(c, sh, name)
			c.mu.groups[name] = g
		}
		c.mu.Unlock()
		g.mu.Lock()
		if g.state != stateDead {
			return g, 0
		}
		g.mu.Unlock() // removed meanwhile: look it up again
	}
	return nil, kerr.CoordinatorNotAvailable.Code
}

// removeLocked drops g from the coordinator and marks it Dead. The caller holds g.mu.
func (c *Coordinator) removeLocked(g *group) {
	c.mu.Lock()
	if c.mu.groups[g.name] == g {
		delete(c.mu.groups, g.name)
	}
	c.mu.Unlock()
	g.unloadLocked(kerr.CoordinatorNotAvailable.Code)
}

// groupsOf returns the groups of the loaded shards, and whether some shard is still
// loading.
func (c *Coordinator) groupsOf() (gs []*group, loading bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, sh := range c.mu.shards {
		if !sh.ready.Load() {
			loading = true
		}
	}
	for _, g := range c.mu.groups {
		if g.sh.ready.Load() {
			gs = append(gs, g)
		}
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].name < gs[j].name })
	return gs, loading
}

// waitCode maps an error from waiting for a record to the Kafka code to answer.
func waitCode(ctx context.Context, err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errNotCoordinator):
		return kerr.NotCoordinator.Code
	case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded):
		return kerr.RequestTimedOut.Code
	default:
		return kerr.CoordinatorNotAvailable.Code
	}
}
