// Package replication owns the local replicas of topic partitions, Kafka's way: a
// leader validates and appends produced batches (idempotent producers, offsets) and
// serves consumers below its high watermark; followers copy its log over the Kafka
// Fetch API (follower.go), which tells the leader how far each got; the high
// watermark is the lowest log end of the in-sync replicas (ISR), which the leader
// shrinks and grows (leader.go) with compare-and-swap writes to the cluster metadata;
// leader epochs (epochs.go, docs/format/leader-epochs.md) let a new follower truncate
// to its leader's log so that replicas never diverge.
//
// Lock order: Manager.mu, then Manager.fetchMu, then Partition.appendMu, then
// Partition.stateMu, then Partition.waitMu.
package replication

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/sasl"

	"skiff/compaction"
	"skiff/internal/fileutil"
	"skiff/logstore"
)

// ErrISRUnchanged is wrapped by a Config.AlterISR error that wrote nothing because
// no part of the proposed change could be made yet.
var ErrISRUnchanged = errors.New("replication: ISR change cannot be made yet")

// Config configures a Manager.
type Config struct {
	// BrokerID is this node's broker id: a partition leads here when its state names it.
	BrokerID int32
	// SessionValid reports whether the broker's session lease is certainly alive; no
	// partition leads while it is false. Nil: always alive (tests, a lone node
	// without sessions).
	SessionValid func() bool
	// SelfEpoch returns the broker epoch of this broker's current registration; a
	// partition leads here only if its state elected this registration (a broker
	// that restarted waits until the controller elects it again). Nil: no check.
	SelfEpoch func() int64
	// Dir holds one folder per partition replica (<data>/topics).
	Dir string
	// Store returns the persistent data of a partition (log index, high-watermark
	// checkpoint), by its folder name.
	Store func(partitionKey string) Store
	// BrokerAddr returns the Kafka address of a broker, to fetch from leaders.
	BrokerAddr func(id int32) (string, bool)
	// TLS, when set, makes connections to leaders TLS: it returns the client
	// configuration for a leader's host (its certificate must name it). Nil:
	// plain TCP.
	TLS func(host string) *tls.Config
	// SASL, when set, authenticates connections to leaders with this mechanism
	// (SaslHandshake v1, SaslAuthenticate v1), again before each session the
	// leader grants ends (KIP-368). Nil: no SASL.
	SASL sasl.Mechanism
	// AlterISR writes a leader's new ISR for a partition if its partition epoch is
	// still partitionEpoch, and returns the ISR written (it may leave out replicas
	// it cannot admit yet) and the new partition epoch. An error wrapping
	// ErrISRUnchanged means nothing was written and the leader should try again
	// later. Nil: ISR changes are not written (a lone node, tests).
	AlterISR func(ctx context.Context, topic string, partition, partitionEpoch int32, isr []int32) ([]int32, int32, error)
	// ReplicaLagMax is replica.lag.time.max.ms: a follower that has not caught up for
	// this long leaves the ISR (default DefaultReplicaLagMax).
	ReplicaLagMax time.Duration
	// ReplicaFetchMinBytes and ReplicaFetchWaitMax are replica.fetch.min.bytes
	// and replica.fetch.wait.max.ms: a follower's fetch waits at the leader until
	// that many bytes are there or that time has passed (defaults
	// DefaultReplicaFetchMinBytes, DefaultReplicaFetchWaitMax). A larger minimum
	// batches small produce requests into fewer fetches, at the cost of up to the
	// wait on acks=all latency.
	ReplicaFetchMinBytes int32
	ReplicaFetchWaitMax  time.Duration
	// Registerer, when set, receives the replication metrics (metrics.go).
	Registerer prometheus.Registerer
	// Logger receives the manager's log lines.
	Logger *slog.Logger
	// RetentionCheckInterval is log.retention.check.interval.ms (default
	// DefaultRetentionCheckInterval).
	RetentionCheckInterval time.Duration
	// ProducerIDExpiration is producer.id.expiration.ms (KIP-854): each retention
	// check forgets, on every partition, the producers that appended nothing for
	// this long and have no transaction open there (default
	// DefaultProducerIDExpiration).
	ProducerIDExpiration time.Duration
	// FS is the filesystem of Dir (segments, leader-epoch checkpoints,
	// partition.metadata); crash tests pass one that loses unsynced data. Default
	// vfs.Default.
	FS vfs.FS
	// SegmentFiles keeps the sealed segment files of every local replica open
	// within a bound (logstore.FileCache). Default: a cache of
	// logstore.DefaultFileCacheSize for this Manager.
	SegmentFiles *logstore.FileCache
	// Cleaner configures the log cleaner that compacts the local replicas of
	// compacted topics (threads, memory, I/O rate); its Targets and Logger are
	// the Manager's.
	Cleaner compaction.CleanerConfig
	// PeerMaxIdle is the longest a BrokerRequest connection is kept idle for
	// reuse: an older one is closed and a new one dialed. Keep it below the
	// other brokers' connections.max.idle.ms, after which they close it
	// (default DefaultPeerMaxIdle).
	PeerMaxIdle time.Duration
}

// TopicSpec is one topic as the cluster metadata describes it, with the partitions
// that have a replica on this node.
type TopicSpec struct {
	Name   string
	ID     [16]byte
	Config PartitionConfig
	// Partitions lists this node's replicas of the topic.
	Partitions []PartitionSpec
}

// PartitionSpec is the state of one local replica's partition.
type PartitionSpec struct {
	ID          int32
	Leader      int32 // broker id of the leader, -1 for none
	LeaderEpoch int32
	// LeaderBrokerEpoch is the broker epoch the leader was elected under (0: unknown).
	LeaderBrokerEpoch int64
	Replicas          []int32
	ISR               []int32
	PartitionEpoch    int32
}

type topicPartition struct {
	topic string
	id    int32
}

// offlinePartition is a local replica that could not be opened (its log has a
// missing segment, or its disk fails): it is not served, and not opened again
// until the node restarts, so that it is reported once.
type offlinePartition struct {
	topicID [16]byte
	err     error
}

// Manager opens, serves and deletes the partition replicas of this node.
type Manager struct {
	cfg    Config
	logger *slog.Logger

	throttle       byteThrottle // follower.replication.throttled.rate
	leaderThrottle byteThrottle // leader.replication.throttled.rate

	mu struct {
		sync.RWMutex
		parts map[topicPartition]*Partition
		// replicated: the partitions with other replicas than this one, the only
		// ones whose ISR can change (the ISR loop visits them several times a second).
		replicated []*Partition
		offline    map[topicPartition]offlinePartition // replicas whose log cannot be opened
		// specs is what Apply last gave each served partition: a metadata change
		// applies itself only to the partitions whose state or config it changed.
		specs map[topicPartition]appliedSpec
		// straysChecked: no folder of a partition that no topic has is left (the
		// first Apply deletes them, and so does any Apply that deletes partitions).
		straysChecked bool
		// last is every topic the last Apply was given, by name: a topic given
		// again with the same spec needs no visit of its partitions.
		last    map[string]TopicSpec
		applied int64
		changed chan struct{} // closed and replaced when applied moves
		closed  bool
	}
	fenced  atomic.Bool // no partition leads while set (the broker has no session)
	metrics Metrics
	// retentionEvery carries a new retention check interval to the retention loop.
	retentionEvery chan time.Duration

	peers peers // idle connections of BrokerRequest (peer.go)

	fetchMu   sync.Mutex
	fetchers  map[int32]*fetcher   // by leader; guarded by fetchMu
	following map[*Partition]int32 // the leader each follower fetches from; guarded by fetchMu

	cleaner *compaction.Cleaner

	stop chan struct{}
	// ctx ends with Close, cutting short the metadata writes of the background loops.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // background loops
}

// SetFenced stops (true) or resumes (false) leadership of every local partition: a
// broker that lost its etcd session, or whose view of the cluster may be stale (the
// process was paused), may already have been replaced as leader, so it must not
// accept writes or serve reads until its session is confirmed and its metadata has
// caught up. Fencing wakes every acks=all produce and every fetch waiting on a local
// partition: they are answered NOT_LEADER_OR_FOLLOWER at once.
func (m *Manager) SetFenced(fenced bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fenced.Store(fenced)
	for _, p := range m.mu.parts {
		p.fenced.Store(fenced)
		p.notify()
	}
}

// Fenced reports whether no partition may lead here now: SetFenced(true), or the
// broker's session is not certainly valid (Config.SessionValid) and the fence is
// about to follow.
func (m *Manager) Fenced() bool { return m.fenced.Load() || !m.cfg.SessionValid() }

// fencePoll is how often WaitUnfenced looks again: the fence also follows the
// session's validity, which lapses and returns without a signal.
const fencePoll = 10 * time.Millisecond

// WaitUnfenced waits until Fenced is false and reports true, or false once ctx ends.
func (m *Manager) WaitUnfenced(ctx context.Context) bool {
	t := time.NewTicker(fencePoll)
	defer t.Stop()
	for m.Fenced() {
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// Defaults of Config, shared with the broker's settings table (appliance).
const (
	DefaultReplicaLagMax          = 30 * time.Second                // replica.lag.time.max.ms
	DefaultReplicaFetchMinBytes   = 1                               // replica.fetch.min.bytes
	DefaultReplicaFetchWaitMax    = 500 * time.Millisecond          // replica.fetch.wait.max.ms
	DefaultRetentionCheckInterval = 5 * time.Minute                 // log.retention.check.interval.ms
	DefaultProducerIDExpiration   = compaction.ProducerIDExpiration // producer.id.expiration.ms
	DefaultPeerMaxIdle            = time.Minute                     // well under connections.max.idle.ms
)

// NewManager creates the topics folder and starts the retention loop.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SessionValid == nil {
		cfg.SessionValid = func() bool { return true }
	}
	if cfg.RetentionCheckInterval <= 0 {
		cfg.RetentionCheckInterval = DefaultRetentionCheckInterval
	}
	if cfg.ProducerIDExpiration <= 0 {
		cfg.ProducerIDExpiration = DefaultProducerIDExpiration
	}
	if cfg.ReplicaLagMax <= 0 {
		cfg.ReplicaLagMax = DefaultReplicaLagMax
	}
	if cfg.ReplicaFetchMinBytes <= 0 {
		cfg.ReplicaFetchMinBytes = DefaultReplicaFetchMinBytes
	}
	if cfg.ReplicaFetchWaitMax <= 0 {
		cfg.ReplicaFetchWaitMax = DefaultReplicaFetchWaitMax
	}
	if cfg.PeerMaxIdle <= 0 {
		cfg.PeerMaxIdle = DefaultPeerMaxIdle
	}
	if cfg.BrokerAddr == nil {
		cfg.BrokerAddr = func(int32) (string, bool) { return "", false }
	}
	if cfg.FS == nil {
		cfg.FS = vfs.Default
	}
	if cfg.SegmentFiles == nil {
		cfg.SegmentFiles = logstore.NewFileCache(0)
	}
	if err := fileutil.MkdirAll(cfg.FS, cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("replication: create %s: %w", cfg.Dir, err)
	}
	m := &Manager{cfg: cfg, logger: cfg.Logger, stop: make(chan struct{}),
		fetchers: make(map[int32]*fetcher), following: make(map[*Partition]int32),
		retentionEvery: make(chan time.Duration, 1)}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.mu.parts = make(map[topicPartition]*Partition)
	m.mu.offline = make(map[topicPartition]offlinePartition)
	m.mu.specs = make(map[topicPartition]appliedSpec)
	m.mu.last = make(map[string]TopicSpec)
	m.mu.changed = make(chan struct{})
	cc := cfg.Cleaner
	cc.Logger = cfg.Logger.With("component", "log-cleaner")
	cc.Targets = func() []compaction.Target {
		parts := m.Partitions()
		ts := make([]compaction.Target, len(parts))
		for i, p := range parts {
			ts[i] = stableTarget{p}
		}
		return ts
	}
	m.cleaner = compaction.New(cc)
	m.registerMetrics(cfg.Registerer)
	m.wg.Add(3)
	go m.retentionLoop()
	go m.isrLoop()
	go m.checkpointLoop()
	return m, nil
}

// PartitionKey is the folder name of a partition replica: "<topic>-<partition>".
func PartitionKey(topic string, id int32) string { return topic + "-" + strconv.Itoa(int(id)) }

// SegmentFiles returns the cache that bounds the idle sealed segment files of
// every local replica (Config.SegmentFiles).
func (m *Manager) SegmentFiles() *logstore.FileCache { return m.cfg.SegmentFiles }

// Partition returns the local replica of topic/id, or nil when there is none.
func (m *Manager) Partition(topic string, id int32) *Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.mu.parts[topicPartition{topic, id}]
}

// Partitions returns every local replica.
func (m *Manager) Partitions() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Partition, 0, len(m.mu.parts))
	for _, p := range m.mu.parts {
		out = append(out, p)
	}
	return out
}

// replicatedPartitions returns the served partitions that have other replicas.
func (m *Manager) replicatedPartitions() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Clone(m.mu.replicated)
}

// Apply makes the local replicas match topics, the whole set of topics at metadata
// revision rev: it opens missing partitions, updates configs, and deletes the data of
// partitions whose topic is gone or was recreated with another id. Folders that
// belong to no topic are deleted too, since the metadata is complete. A topic
// whose spec is that of the last Apply is not visited again, nor is a partition
// whose state and config are, so a change costs what it changed (and a comparison
// per partition of the changed topics): a restart that moves the leadership of
// thousands of partitions in batches applies each batch, not every partition again.
func (m *Manager) Apply(rev int64, topics []TopicSpec) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return errors.New("replication: manager closed")
	}
	var errs []error
	next := make(map[string]TopicSpec, len(topics))
	same := make(map[string]bool, len(topics)) // every partition is as the last Apply left it
	want := make(map[topicPartition]TopicSpec)
	state := make(map[topicPartition]PartitionSpec)
	for _, t := range topics {
		if last, ok := m.mu.last[t.Name]; ok && sameTopicSpec(last, t) {
			next[t.Name] = last
			same[t.Name] = true
			continue
		}
		kept := t // a copy: the caller may change its partitions' states later
		kept.Partitions = slices.Clone(t.Partitions)
		next[t.Name] = kept
		for _, ps := range t.Partitions {
			want[topicPartition{t.Name, ps.ID}] = t
			state[topicPartition{t.Name, ps.ID}] = ps
		}
	}
	var changed []*Partition
	removed := false
	for tp, p := range m.mu.parts {
		if same[tp.topic] {
			continue
		}
		t, ok := want[tp]
		if ok && t.ID == p.TopicID {
			if a := newAppliedSpec(state[tp], t.Config); !a.equal(m.mu.specs[tp]) {
				changed = append(changed, p)
				m.mu.specs[tp] = a
			}
			continue
		}
		removed = true
		delete(m.mu.parts, tp)
		delete(m.mu.specs, tp)
		m.follow(p, -1)
		if err := p.delete(); err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", PartitionKey(tp.topic, tp.id), err))
		}
		m.logger.Info("deleted partition", "topic", tp.topic, "partition", tp.id)
	}
	for tp, off := range m.mu.offline {
		if same[tp.topic] {
			continue
		}
		if t, ok := want[tp]; !ok || t.ID != off.topicID {
			delete(m.mu.offline, tp) // the topic is gone (or another one has its name)
			removed = true
		}
	}
	var open []topicPartition
	for tp := range want {
		_, served := m.mu.parts[tp]
		_, offline := m.mu.offline[tp]
		if !served && !offline {
			open = append(open, tp)
		}
	}
	if m.applyAll(changed, want, state, true) {
		m.cleaner.Wake()
	}
	var added []*Partition
	for _, o := range m.openAll(open, want) {
		tp, t, p, err := o.tp, want[o.tp], o.p, o.err
		if err != nil {
			m.mu.offline[tp] = offlinePartition{topicID: t.ID, err: err}
			m.logger.Error("partition offline: its log cannot be opened, so it is not served (fix the data directory and restart the node)",
				"topic", tp.topic, "partition", tp.id, "err", err)
			continue
		}
		p.fenced.Store(m.fenced.Load())
		p.sessionValid, p.selfEpoch = m.cfg.SessionValid, m.cfg.SelfEpoch
		p.leaderThrottle = &m.leaderThrottle
		m.mu.parts[tp] = p
		m.mu.specs[tp] = newAppliedSpec(state[tp], t.Config)
		added = append(added, p)
	}
	m.applyAll(added, want, state, false)
	if removed || len(changed) > 0 || len(added) > 0 {
		m.mu.replicated = m.mu.replicated[:0]
		for tp, p := range m.mu.parts {
			if len(m.mu.specs[tp].st.Replicas) > 1 {
				m.mu.replicated = append(m.mu.replicated, p)
			}
		}
	}
	if removed || !m.mu.straysChecked {
		// Listing the topics folder costs as much as the partitions it holds:
		// only when a folder may be left without a topic.
		m.mu.straysChecked = len(errs) == 0
		if err := m.removeStrayLocked(next); err != nil {
			m.mu.straysChecked = false
			errs = append(errs, err)
		}
	}
	m.mu.last = next
	if rev > m.mu.applied {
		m.mu.applied = rev
		close(m.mu.changed)
		m.mu.changed = make(chan struct{})
	}
	return errors.Join(errs...)
}

// appliedSpec is the state and config Apply gave a served partition.
type appliedSpec struct {
	st  PartitionSpec
	cfg PartitionConfig // without its logger and FS, made anew by every Apply
}

func newAppliedSpec(st PartitionSpec, cfg PartitionConfig) appliedSpec {
	return appliedSpec{st: st, cfg: bareConfig(cfg)}
}

// bareConfig is cfg without what is not compared: its logger and FS.
func bareConfig(cfg PartitionConfig) PartitionConfig {
	cfg.Log.Logger, cfg.Log.FS = nil, nil
	return cfg
}

func (a appliedSpec) equal(b appliedSpec) bool {
	return a.cfg == b.cfg && samePartitionSpec(a.st, b.st)
}

func samePartitionSpec(x, y PartitionSpec) bool {
	return x.ID == y.ID && x.Leader == y.Leader && x.LeaderEpoch == y.LeaderEpoch &&
		x.LeaderBrokerEpoch == y.LeaderBrokerEpoch && x.PartitionEpoch == y.PartitionEpoch &&
		slices.Equal(x.Replicas, y.Replicas) && slices.Equal(x.ISR, y.ISR)
}

// sameTopicSpec reports whether a and b are the same topic with the same config
// (but for its logger and FS) and the same partitions in the same states.
func sameTopicSpec(a, b TopicSpec) bool {
	return a.ID == b.ID && bareConfig(a.Config) == bareConfig(b.Config) &&
		slices.EqualFunc(a.Partitions, b.Partitions, samePartitionSpec)
}

// Offline returns why the local replica of topic/id is offline (its log could not
// be opened when it was assigned here, or at start), or nil.
func (m *Manager) Offline(topic string, id int32) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if off, ok := m.mu.offline[topicPartition{topic, id}]; ok {
		return off.err
	}
	return nil
}

// WaitApplied blocks until Apply has run for metadata revision rev or later, or ctx ends.
func (m *Manager) WaitApplied(ctx context.Context, rev int64) error {
	for {
		m.mu.RLock()
		applied, ch := m.mu.applied, m.mu.changed
		m.mu.RUnlock()
		if applied >= rev {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

const metadataFile = "partition.metadata"

// openers bounds how many partitions Apply opens (and Close closes) at once. Opening a log is
// mostly waiting for the disk (a directory fsync, reads of the unsynced tail), so
// a node that starts with thousands of partitions opens them side by side: the
// file system commits concurrent fsyncs together.
const openers = 32

// opened is the outcome of opening one partition.
type opened struct {
	tp  topicPartition
	p   *Partition
	err error
}

// openAll opens the partitions tps of want, up to openers at once, and returns
// the outcomes in the order of tps. m.mu is held.
func (m *Manager) openAll(tps []topicPartition, want map[topicPartition]TopicSpec) []opened {
	out := make([]opened, len(tps))
	inParallel(len(tps), func(i int) {
		p, err := m.openLocked(tps[i], want[tps[i]])
		out[i] = opened{tp: tps[i], p: p, err: err}
	})
	return out
}

// applyAll applies the metadata to the served partitions parts (their configs
// too with configs) side by side, as openAll opens them: becoming leader saves
// the leader-epoch checkpoint (two fsyncs), and a restart makes every partition
// lead in a new epoch. The fetchers then follow the leaders, one at a time. It
// reports whether a config change wants the log cleaner. m.mu is held.
func (m *Manager) applyAll(parts []*Partition, want map[topicPartition]TopicSpec, state map[topicPartition]PartitionSpec, configs bool) (wake bool) {
	leaders := make([]int32, len(parts))
	wakes := make([]bool, len(parts))
	inParallel(len(parts), func(i int) {
		tp := topicPartition{parts[i].Topic, parts[i].ID}
		if configs {
			wakes[i] = parts[i].SetConfig(want[tp].Config)
		}
		leaders[i] = parts[i].applyState(state[tp])
	})
	for i, p := range parts {
		m.follow(p, leaders[i])
	}
	return slices.Contains(wakes, true)
}

// inParallel calls f(0) ... f(n-1), up to openers at once, and returns when all
// have returned.
func inParallel(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(openers, n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// openLocked opens a partition folder, first deleting one left by an older topic of
// the same name (its partition.metadata names another topic id). m.mu is held; it
// changes no state of m, so that openAll may run several at once.
func (m *Manager) openLocked(tp topicPartition, t TopicSpec) (*Partition, error) {
	fs := m.cfg.FS
	t.Config.Log.Files = m.cfg.SegmentFiles
	key := PartitionKey(tp.topic, tp.id)
	dir := fs.PathJoin(m.cfg.Dir, key)
	id := hex.EncodeToString(t.ID[:])
	meta := fs.PathJoin(dir, metadataFile)
	if b, err := fileutil.ReadFile(fs, meta); err == nil && strings.TrimSpace(string(b)) != "topic_id: "+id {
		m.logger.Info("deleting partition of an older topic with the same name", "dir", dir)
		if p, err := openPartition(fs, dir, tp.topic, tp.id, t.ID, t.Config, m.cfg.Store(key), m.cfg.BrokerID, m.cfg.ProducerIDExpiration, m.logger); err == nil {
			if err := p.delete(); err != nil {
				return nil, fmt.Errorf("delete old %s: %w", key, err)
			}
		} else if err := fs.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("delete old %s: %w", key, err)
		}
	}
	if _, err := fs.Stat(dir); errors.Is(err, os.ErrNotExist) {
		// A new partition: its folder and partition.metadata come before the
		// log, whose first segment fsyncs the folder, which makes the name of
		// partition.metadata durable too (one fsync of the folder, not two: a
		// topic's creation waits for these, partition by partition).
		if err := fileutil.MkdirAll(fs, dir, 0o755); err != nil {
			return nil, fmt.Errorf("create %s: %w", dir, err)
		}
		if err := fileutil.RenameSynced(fs, meta, []byte("topic_id: "+id+"\n")); err != nil {
			return nil, fmt.Errorf("write %s: %w", meta, err)
		}
	}
	p, err := openPartition(fs, dir, tp.topic, tp.id, t.ID, t.Config, m.cfg.Store(key), m.cfg.BrokerID, m.cfg.ProducerIDExpiration, m.logger)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", key, err)
	}
	if _, err := fs.Stat(meta); errors.Is(err, os.ErrNotExist) { // a folder from before partition.metadata was written first
		if err := fileutil.ReplaceFile(fs, meta, []byte("topic_id: "+id+"\n")); err != nil {
			p.close()
			return nil, fmt.Errorf("write %s: %w", meta, err)
		}
	}
	return p, nil
}

func (m *Manager) removeStrayLocked(topics map[string]TopicSpec) error {
	fs := m.cfg.FS
	names, err := fs.List(m.cfg.Dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", m.cfg.Dir, err)
	}
	keys := make(map[string]bool)
	for _, t := range topics {
		for _, ps := range t.Partitions {
			keys[PartitionKey(t.Name, ps.ID)] = true
		}
	}
	var errs []error
	for _, name := range names {
		dir := fs.PathJoin(m.cfg.Dir, name)
		if keys[name] {
			continue
		}
		if fi, err := fs.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		m.logger.Info("deleting folder of a partition that no topic has", "dir", dir)
		idx := m.cfg.Store(name)
		l, err := logstore.Open(dir, logstore.Config{Logger: m.logger, FS: fs, Files: m.cfg.SegmentFiles}, idx)
		if err == nil {
			err = l.Delete()
		} else {
			err = errors.Join(idx.Delete(), fs.RemoveAll(dir))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("delete stray %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) retentionLoop() {
	defer m.wg.Done()
	t := time.NewTicker(m.cfg.RetentionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case d := <-m.retentionEvery:
			t.Reset(d)
		case now := <-t.C:
			m.ApplyRetention(now)
		}
	}
}

// SetRetentionCheckInterval changes log.retention.check.interval.ms while the
// manager runs: the next retention pass is d from now. A d that is not positive
// is ignored.
func (m *Manager) SetRetentionCheckInterval(d time.Duration) {
	if d <= 0 {
		return
	}
	for {
		select {
		case m.retentionEvery <- d:
			return
		default:
		}
		select { // replace an interval the loop has not taken yet
		case <-m.retentionEvery:
		default:
		}
	}
}

// ApplyRetention runs time and size retention on every partition now, and
// forgets producers idle longer than producer.id.expiration.ms.
func (m *Manager) ApplyRetention(now time.Time) {
	parts := m.Partitions()
	sort.Slice(parts, func(i, j int) bool { return parts[i].Topic < parts[j].Topic })
	for _, p := range parts {
		if err := p.applyRetention(now); err != nil {
			m.logger.Error("retention failed", "topic", p.Topic, "partition", p.ID, "err", err)
		}
		if n := p.expireProducers(now.Add(-m.cfg.ProducerIDExpiration)); n > 0 {
			m.logger.Debug("forgot idle producers", "topic", p.Topic, "partition", p.ID, "producers", n)
		}
	}
}

// Close stops the background loops and the fetchers, and closes every partition
// (each checkpoints its high watermark and syncs its log).
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return nil
	}
	m.mu.closed = true
	close(m.stop)
	m.cancel()
	parts := m.mu.parts
	m.mu.parts, m.mu.replicated = nil, nil
	m.mu.Unlock()
	m.wg.Wait()
	m.cleaner.Close() // before the logs close: its rewrites in progress are dropped
	m.closePeers()
	m.fetchMu.Lock()
	for id, f := range m.fetchers {
		f.close()
		delete(m.fetchers, id)
	}
	m.fetchMu.Unlock()
	// Closing syncs each log: side by side, as openAll opens them.
	tps := slices.Collect(maps.Keys(parts))
	errs := make([]error, len(tps))
	inParallel(len(tps), func(i int) {
		if err := parts[tps[i]].close(); err != nil {
			errs[i] = fmt.Errorf("close %s: %w", PartitionKey(tps[i].topic, tps[i].id), err)
		}
	})
	return errors.Join(errs...)
}

// SetCleaner applies the Threads, DedupeBufferSize, IOBytesPerSecond and
// Backoff of cc to the running log cleaner (dynamic broker configs).
func (m *Manager) SetCleaner(cc compaction.CleanerConfig) { m.cleaner.Reconfigure(cc) }
