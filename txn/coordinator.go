// Package txn is the transaction coordinator (KIP-98, KIP-447): it gives
// transactional producers their producer id and epoch (InitProducerId), records the
// partitions a transaction writes to (AddPartitionsToTxn, AddOffsetsToTxn), and ends
// transactions (EndTxn, timeouts) by writing commit or abort markers to every one
// of those partitions, then recording the transaction complete.
//
// A transactional id belongs to one partition of the internal topic
// __transaction_state, PartitionFor(id); the node leading that partition
// coordinates it. The appliance tells the Coordinator which partitions it leads
// (Elect) and which it no longer does (Resign); requests for the others get
// NOT_COORDINATOR.
//
// Storage: every change of a transaction's state is appended to its partition as a
// record in Kafka's format (TransactionLogKey/Value, docs/format/transactions.md)
// and takes effect once committed (on every in-sync replica). The log is the truth,
// materialized in a store (store.go: Pebble, tag 0x09) by every local replica as
// records are committed (follow.go): on Elect a shard applies what the store lacks
// of the log and loads the last record of each transactional id from it;
// transactions found prepared are completed again (markers
// are idempotent: a partition ignores a marker for a transaction not open there).
//
// Each transaction has at most one change in flight (txnMeta.pending): requests that
// would change it meanwhile get CONCURRENT_TRANSACTIONS, which clients retry,
// except the producer's AddPartitionsToTxn and AddOffsetsToTxn, which wait for
// the change in flight and, after EndTxn, for the markers (complete.go): EndTxn
// answers once the decision is committed. Those that wait together are written
// together, in one record (ops.go, addBatch).
//
// Transaction version 2 (KIP-890 part 2; no request reaches it until the
// feature is served, docs/design/txn-v2.md): every EndTxn v5 bumps the epoch
// (endtxn.go), partition leaders add partitions implicitly, appended one after
// another without waiting for each other's commit (chain.go), and the first
// add of the next transaction carries the previous one's completion instead of
// waiting for its markers (carry.go).
//
// Lock order: Coordinator.mu, then shard.mu; no lock is held while appending,
// waiting for a commit or writing markers.
package txn

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"skiff/groups"
	"skiff/internal/follow"
	"skiff/logstore"
	"skiff/offsets"
	"skiff/replication"
)

// Defaults of Config, shared with the broker's settings table (appliance).
const (
	DefaultMaxTimeout                 = 15 * time.Minute // transaction.max.timeout.ms
	DefaultAbortCheckInterval         = 10 * time.Second // transaction.abort.timed.out.transaction.cleanup.interval.ms
	DefaultTopicPartitions      int32 = 16               // transaction.state.log.num.partitions (Kafka: 50)
	DefaultTopicReplication     int16 = 3                // transaction.state.log.replication.factor
	DefaultIDExpiration               = 7 * 24 * time.Hour
	defaultCommitTimeout              = 10 * time.Second
	defaultMarkerRetryBackoff         = 100 * time.Millisecond
	defaultMaxMarkerRetryBackof       = 2 * time.Second
)

// DefaultVersion is the transaction version the broker serves (the
// transaction.version feature): 1 (KIP-890 part 1) until version 2's
// end-to-end fault tests run in CI (docs/design/txn-v2.md).
const DefaultVersion int16 = 1

// Marker is one commit or abort marker for a partition of a transaction.
type Marker struct {
	Topic            string
	Partition        int32
	ProducerID       int64
	Epoch            int16
	Commit           bool
	CoordinatorEpoch int32
	// TV2: the transaction is a TV2 client's (KIP-890 part 2): Epoch is the
	// bumped one, above its data's (WriteTxnMarkers v2 transaction_version 2).
	TV2 bool
}

// Config configures a Coordinator. Zero values take the documented defaults.
type Config struct {
	// AllocateProducerID returns a producer id never given out before (required).
	AllocateProducerID func(ctx context.Context) (int64, error)
	// WriteMarkers writes markers to their partitions' leaders and returns once each
	// is committed there, or fails (they are written again later: a partition
	// ignores a marker for a transaction it no longer has open), with the stamp
	// each marker got (notice.go; nil or zero: unknown). Required.
	WriteMarkers func(ctx context.Context, markers []Marker) ([]Stamp, error)
	// Notify sends notices to their partitions' leaders, best effort
	// (notice.go). Default: none sent, leaders verify with the coordinator.
	Notify func(ctx context.Context, notices []Notice)
	// TopicPartitions returns the partition count of a topic, ok false when it does
	// not exist; AddPartitionsToTxn refuses other partitions. Default: all accepted.
	TopicPartitions func(topic string) (int32, bool)
	// OffsetsPartition returns the __consumer_offsets partition of a group, ok false
	// while the topic does not exist (AddOffsetsToTxn).
	OffsetsPartition func(group string) (int32, bool)
	// MaxTimeout is transaction.max.timeout.ms: a producer asking for a longer
	// transaction timeout gets INVALID_TRANSACTION_TIMEOUT (default DefaultMaxTimeout).
	MaxTimeout time.Duration
	// AbortCheckInterval is how often transactions open longer than their timeout
	// are looked for and aborted (default DefaultAbortCheckInterval).
	AbortCheckInterval time.Duration
	// IDExpiration is transactional.id.expiration.ms: a transactional id with no
	// transaction open and no request for this long is forgotten (a tombstone
	// in the log); its next InitProducerId gets a new producer id (default
	// DefaultIDExpiration).
	IDExpiration time.Duration
	// CommitTimeout bounds the wait for a state record to be committed, and how
	// long the producer's next transaction waits for the markers of the one it
	// ended (default 10 s).
	CommitTimeout time.Duration
	// DB holds the materialized state of __transaction_state (offsets.TxnShard);
	// nil: it is kept in memory, and a coordinator's first election applies its
	// partition's whole log.
	DB *offsets.DB
	// Logger receives the coordinator's log lines (default: discard).
	Logger *slog.Logger
	// FirstEpoch is the producer epoch a new transactional id starts at (0).
	// Tests only: the epoch overflow of transaction version 2 needs an id near
	// 32767, which would otherwise take 32,000 transactions.
	FirstEpoch int16
}

func (c *Config) setDefaults() {
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	if c.AbortCheckInterval <= 0 {
		c.AbortCheckInterval = DefaultAbortCheckInterval
	}
	if c.CommitTimeout <= 0 {
		c.CommitTimeout = defaultCommitTimeout
	}
	if c.IDExpiration <= 0 {
		c.IDExpiration = DefaultIDExpiration
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Log is the leader replica of a __transaction_state partition (a
// *replication.Partition).
type Log interface {
	Append(batch []byte, acks int16) (replication.AppendResult, error)
	HighWatermark() int64
	LogStartOffset() int64
	LogEndOffset() int64
	ReadCommitted(offset, maxBytes int64) (*logstore.Slice, error)
	WaitHighWatermark(ctx context.Context, epoch int32, offset int64) error
	AddWaiter(ch chan<- struct{})
	RemoveWaiter(ch chan<- struct{})
}

var _ Log = (*replication.Partition)(nil)

// errNotCoordinator: the shard was resigned while a request waited on it.
var errNotCoordinator = errors.New("txn: no longer the coordinator of this transactional id")

// Coordinator is the transaction coordinator of one node.
type Coordinator struct {
	cfg        Config
	logger     *slog.Logger
	partitions atomic.Int32 // of __transaction_state; 0 until known

	mu struct {
		sync.Mutex
		shards map[int32]*shard
		stores map[int32]*partitionStore
		closed bool
	}
	followers follow.Appliers[FollowLog] // follow.go
}

// New returns a coordinator that leads no partition yet.
func New(cfg Config) *Coordinator {
	cfg.setDefaults()
	c := &Coordinator{cfg: cfg, logger: cfg.Logger}
	c.mu.shards = make(map[int32]*shard)
	c.mu.stores = make(map[int32]*partitionStore)
	c.followers.Apply = c.applyFollowed
	c.followers.Retry = retryLoad
	return c
}

// PartitionFor returns the __transaction_state partition of a transactional id
// when the topic has n partitions: Kafka's abs(id.hashCode()) % n.
func PartitionFor(id string, n int32) int32 { return groups.PartitionFor(id, n) }

// SetPartitions tells the coordinator the partition count of __transaction_state.
func (c *Coordinator) SetPartitions(n int32) { c.partitions.Store(n) }

// Elect makes this node the coordinator of the transactional ids of
// __transaction_state partition id, whose replica here leads in leader epoch epoch.
// The shard loads from the log in the background; requests meanwhile get
// COORDINATOR_LOAD_IN_PROGRESS. A new epoch reloads it.
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
	sh := newShard(c, id, epoch, log)
	c.mu.Lock()
	if c.mu.closed || c.mu.shards[id] != nil {
		c.mu.Unlock()
		return
	}
	c.mu.shards[id] = sh
	c.mu.Unlock()
	go sh.run()
}

// Resign stops coordinating partition id; it returns once the shard no longer
// touches its log.
func (c *Coordinator) Resign(id int32) {
	c.mu.Lock()
	sh := c.mu.shards[id]
	delete(c.mu.shards, id)
	c.mu.Unlock()
	if sh != nil {
		sh.stop()
	}
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

// Close resigns every partition. It is idempotent.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	c.mu.closed = true
	ids := make([]int32, 0, len(c.mu.shards))
	for id := range c.mu.shards {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.Resign(id)
	}
	c.followers.Close()
	return nil
}

// shardFor returns the loaded shard of a transactional id, or the code to answer.
func (c *Coordinator) shardFor(id string) (*shard, int16) {
	n := c.partitions.Load()
	if n <= 0 {
		return nil, codeNotCoordinator
	}
	c.mu.Lock()
	sh := c.mu.shards[PartitionFor(id, n)]
	c.mu.Unlock()
	switch {
	case sh == nil:
		return nil, codeNotCoordinator
	case !sh.ready.Load():
		return nil, codeLoadInProgress
	}
	return sh, 0
}

// shards returns the loaded shards.
func (c *Coordinator) loadedShards() []*shard {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*shard
	for _, sh := range c.mu.shards {
		if sh.ready.Load() {
			out = append(out, sh)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// waitCode maps an error of appending or waiting to the code to answer.
func waitCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errNotCoordinator):
		return codeNotCoordinator
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return codeRequestTimedOut
	default:
		return codeNotCoordinator // the leadership moved or fails: the client looks again
	}
}
