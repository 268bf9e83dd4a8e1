package sharegroup

// TopicStore keeps share-partition states in the internal topic
// __share_group_state (docs/format/share-state.md), through an ordinary Kafka
// client of the cluster (franz-go) speaking to the brokers' inter-broker
// listener: a write is a produce with acks=all to the state's partition, and every
// node tails the whole topic to answer loads from memory.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// StoreClientID is the client id of the store's connections; the broker lets it
// (with CLUSTER_ACTION) write the internal topic.
const StoreClientID = "skiff-share-state"

// TopicStoreConfig configures a TopicStore.
type TopicStoreConfig struct {
	// Seeds returns brokers' inter-broker addresses to start from.
	Seeds func() []string
	// TLS, when set, returns the client TLS config for a host.
	TLS func(host string) *tls.Config
	// SASL, when set, authenticates the connections.
	SASL sasl.Mechanism
	// Ensure creates the state topic when it does not exist yet.
	Ensure func(ctx context.Context) error
	Logger *slog.Logger
}

// TopicStore is the Store of a node.
type TopicStore struct {
	cfg TopicStoreConfig

	startOnce sync.Once
	nparts    atomic.Int32 // partitions of the state topic, once known
	cl        *kgo.Client  // the state topic: writes and the tail
	dlq       *kgo.Client  // dead-letter topics: writes, partitioned by key
	startErr  error
	stop      chan struct{}
	done      chan struct{}

	mu struct {
		sync.Mutex
		states   map[Key]State
		configs  map[string]map[string]string // group configs
		consumed map[int32]int64              // next offset read, per partition
		// late: keys whose last record read is a late write of an older
		// state, with its offset (lateLocked).
		late    map[Key]int64
		changed chan struct{} // closed when consumed moves; replaced
	}
}

// NewTopicStore returns a store that connects on first use.
func NewTopicStore(cfg TopicStoreConfig) *TopicStore {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &TopicStore{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{})}
	s.mu.states = make(map[Key]State)
	s.mu.configs = make(map[string]map[string]string)
	s.mu.consumed = make(map[int32]int64)
	s.mu.changed = make(chan struct{})
	return s
}

func (s *TopicStore) start(ctx context.Context) error {
	s.startOnce.Do(func() {
		if err := s.cfg.Ensure(ctx); err != nil {
			s.startErr = fmt.Errorf("create %s: %w", StateTopic, err)
			s.startOnce = sync.Once{} // try again next time
			return
		}
		opts := []kgo.Opt{
			kgo.SeedBrokers(s.cfg.Seeds()...),
			kgo.ClientID(StoreClientID),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.DisableIdempotentWrite(),
			kgo.ProducerLinger(0),
			kgo.MetadataMinAge(250 * time.Millisecond),
		}
		if s.cfg.TLS != nil {
			opts = append(opts, kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
				var d net.Dialer
				c, err := d.DialContext(ctx, network, host)
				if err != nil {
					return nil, err
				}
				h, _, _ := net.SplitHostPort(host)
				tc := tls.Client(c, s.cfg.TLS(h))
				return tc, nil
			}))
		}
		if s.cfg.SASL != nil {
			opts = append(opts, kgo.SASL(s.cfg.SASL))
		}
		dlq, err := kgo.NewClient(opts...)
		if err != nil {
			s.startErr = err
			return
		}
		cl, err := kgo.NewClient(append(opts,
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ConsumeTopics(StateTopic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(200*time.Millisecond),
		)...)
		if err != nil {
			dlq.Close()
			s.startErr = err
			return
		}
		s.cl, s.dlq = cl, dlq
		go s.tail()
	})
	if s.cl == nil && s.startErr == nil {
		return errors.New("sharegroup: store not started")
	}
	return s.startErr
}

// tail reads the state topic for ever, keeping the newest state of every key.
func (s *TopicStore) tail() {
	defer close(s.done)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.stop
		cancel()
	}()
	for ctx.Err() == nil {
		fs := s.cl.PollFetches(ctx)
		s.mu.Lock()
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				if group, ok := decodeConfigKey(r.Key); ok {
					if r.Value == nil { // the group was deleted
						delete(s.mu.configs, group)
						continue
					}
					c, err := decodeConfigs(r.Value)
					if err != nil {
						s.cfg.Logger.Warn("corrupt share group config record", "partition", r.Partition, "offset", r.Offset, "err", err)
						continue
					}
					s.mu.configs[group] = c
					continue
				}
				k, err := decodeKey(r.Key)
				if err != nil {
					continue
				}
				st, err := decodeState(r.Value)
				if err != nil {
					s.cfg.Logger.Warn("corrupt share state record", "partition", r.Partition, "offset", r.Offset, "err", err)
					continue
				}
				old, ok := s.mu.states[k]
				switch {
				case !ok || st.newer(old) || st.LeaderEpoch == old.LeaderEpoch && st.Seq == old.Seq:
					s.mu.states[k] = st
					delete(s.mu.late, k) // the newest is last again
				default:
					// A late write (a deposed leader's, or a write whose
					// produce failed on the client and landed after its
					// successor's): readers ignore it, but it is now the last
					// record of its key, the one compaction keeps.
					s.lateLocked(k, p.Partition, r.Offset)
				}
			}
			if n := len(p.Records); n > 0 {
				s.mu.consumed[p.Partition] = p.Records[n-1].Offset + 1
			}
		})
		close(s.mu.changed)
		s.mu.changed = make(chan struct{})
		s.mu.Unlock()
	}
}

const (
	// rewriteDelay is how long a late write must stay the last record of its key
	// before the newest state is written again: a share-partition being written
	// writes again soon anyway, and the delay keeps rewrites (one per node) from
	// racing such writes.
	rewriteDelay = time.Second
	// rewriteTimeout bounds a rewrite of a key's newest state.
	rewriteTimeout = 10 * time.Second
)

// lateLocked notes, locked, that the record at offset of partition p, a late
// write of key k, is the key's last record: unless a record of the newest state
// (or a newer one) follows within rewriteDelay, the newest is written again,
// unchanged, so that it is last (the record compaction keeps, and the one a tail
// started after compaction reads). Every node whose tail reads the late write
// does so; the copies are equal, and readers keep one.
func (s *TopicStore) lateLocked(k Key, p int32, offset int64) {
	if s.mu.late == nil {
		s.mu.late = make(map[Key]int64)
	}
	s.mu.late[k] = offset
	time.AfterFunc(rewriteDelay, func() {
		s.mu.Lock()
		at, ok := s.mu.late[k]
		st := s.mu.states[k]
		if ok && at == offset {
			delete(s.mu.late, k)
		}
		s.mu.Unlock()
		if !ok || at != offset {
			return // a newer write came, or a later late one has its own timer
		}
		select {
		case <-s.stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), rewriteTimeout)
		s.cl.Produce(ctx, kgoRecord(encodeKey(k), encodeState(st), p), func(_ *kgo.Record, err error) {
			cancel()
			if err != nil {
				s.cfg.Logger.Warn("share state: rewriting a key's newest state after a late write failed", "group", k.Group, "partition", k.Partition, "err", err)
			}
		})
	})
}

// partitionOf places a key in one of n partitions.
func partitionOf(k Key, n int32) int32 { return int32(fnv32(encodeKey(k)) % uint32(n)) }

// configPartition places a group's configs in one of n partitions.
func configPartition(group string, n int32) int32 {
	return int32(fnv32(encodeConfigKey(group)) % uint32(n))
}

func fnv32(b []byte) uint32 {
	h := fnv.New32a()
	h.Write(b)
	return h.Sum32()
}

func kgoRecord(key, value []byte, p int32) *kgo.Record {
	return &kgo.Record{Topic: StateTopic, Partition: p, Key: key, Value: value}
}

// endOffsets returns the end offsets of partitions parts of the state topic. It
// asks again after a failed request, and for the partitions whose answer is a
// retriable error, such as a leader that has just moved, or OFFSET_NOT_AVAILABLE
// from a new leader whose high watermark may still lag what the previous leader
// committed (the last writes it acknowledged), until ctx ends.
func (s *TopicStore) endOffsets(ctx context.Context, parts ...int32) (map[int32]int64, error) {
	want := make(map[int32]bool, len(parts))
	for _, p := range parts {
		want[p] = true
	}
	out := make(map[int32]int64, len(want))
	for {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = StateTopic
		for p := range want {
			if _, ok := out[p]; !ok {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp = p, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, s.cl)
		if err == nil {
			for _, t := range resp.Topics {
				for _, rp := range t.Partitions {
					switch perr := kerr.ErrorForCode(rp.ErrorCode); {
					case t.Topic != StateTopic || !want[rp.Partition]:
					case perr == nil:
						out[rp.Partition] = rp.Offset
					case !kerr.IsRetriable(perr):
						return nil, fmt.Errorf("end offset of %s-%d: %w", StateTopic, rp.Partition, perr)
					default:
						err = perr
					}
				}
			}
			if len(out) == len(want) {
				return out, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("end offsets of %s: %w (last: %v)", StateTopic, ctx.Err(), err)
		case <-time.After(endOffsetRetry):
		}
	}
}

// endOffsetRetry is the pause before asking a state partition's end again.
const endOffsetRetry = 50 * time.Millisecond

// waitConsumed waits until the tail has read partition p up to end.
func (s *TopicStore) waitConsumed(ctx context.Context, p int32, end int64) error {
	for {
		s.mu.Lock()
		got, c := s.mu.consumed[p], s.mu.changed
		s.mu.Unlock()
		if got >= end {
			return nil
		}
		select {
		case <-c:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Load returns the newest state of key, once the tail has read the key's
// partition, and the partition of its group's configs (share.auto.offset.reset
// decides where a share-partition without state starts), up to their ends as of
// now.
func (s *TopicStore) Load(ctx context.Context, key Key) (State, bool, error) {
	if err := s.start(ctx); err != nil {
		return State{}, false, err
	}
	n, err := s.partitions(ctx)
	if err != nil {
		return State{}, false, err
	}
	ends, err := s.endOffsets(ctx, partitionOf(key, n), configPartition(key.Group, n))
	if err != nil {
		return State{}, false, err
	}
	for p, end := range ends {
		if err := s.waitConsumed(ctx, p, end); err != nil {
			return State{}, false, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.mu.states[key]
	return st, ok, nil
}

// Save writes st for key and returns once every in-sync replica has it.
func (s *TopicStore) Save(ctx context.Context, key Key, st State) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	n, err := s.partitions(ctx)
	if err != nil {
		return err
	}
	return s.cl.ProduceSync(ctx, kgoRecord(encodeKey(key), encodeState(st), partitionOf(key, n))).FirstErr()
}

func (s *TopicStore) partitions(ctx context.Context) (int32, error) {
	if n := s.nparts.Load(); n > 0 {
		return n, nil
	}
	td, err := kadm.NewClient(s.cl).ListTopics(ctx, StateTopic)
	if err != nil {
		return 0, err
	}
	t, ok := td[StateTopic]
	if !ok || t.Err != nil || len(t.Partitions) == 0 {
		return 0, fmt.Errorf("%s is not in the metadata yet", StateTopic)
	}
	s.nparts.Store(int32(len(t.Partitions)))
	return int32(len(t.Partitions)), nil
}

// Close stops the tail and the client. It is idempotent.
func (s *TopicStore) Close() error {
	select {
	case <-s.stop:
		return nil
	default:
	}
	close(s.stop)
	if s.cl != nil {
		<-s.done
		s.cl.Close()
		s.dlq.Close()
	}
	return nil
}

// StatePartition is the partition of a state topic of n partitions that holds
// key's state: the one FindCoordinator with key type 2 (share) names the leader
// of.
func StatePartition(key Key, n int32) int32 { return partitionOf(key, n) }
