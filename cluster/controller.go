package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// ControllerConfig configures a Controller.
type ControllerConfig struct {
	// BrokerID is this broker, the candidate's value in the election.
	BrokerID int32
	// Session returns the broker's current session; the candidacy lives on its lease,
	// so a broker that loses its session loses the controllership with it.
	Session func() *Session
	// AutoRebalance is auto.leader.rebalance.enable (default true in the node config):
	// leadership moves back to preferred replicas.
	AutoRebalance bool
	// RebalanceInterval is leader.imbalance.check.interval: how often the preferred
	// leader rebalance runs (default DefaultRebalanceInterval). Failover does not
	// wait for it.
	RebalanceInterval time.Duration
	// DepartGrace is how long a broker whose registration ended without it leaving
	// (Broker.Leaving: its lease expired, or was revoked) still counts as live for
	// leadership and the ISR. An etcd member that led before its process was paused
	// revokes, as it resumes, leases that are alive (Session.watchKey): their brokers
	// register again within milliseconds under the same broker epoch, and with this
	// grace nothing moves meanwhile. It delays failover after a crash by as much. 0:
	// no grace.
	DepartGrace time.Duration
	Logger      *slog.Logger
}

// Controller runs for the controllership of the cluster (a concurrency.Election under
// /skiff/controller/ on the broker's session lease) and, while it holds it, keeps
// partition leadership right: failover of partitions whose leader lost its session
// and the preferred-leader rebalance (planLeaders), and moves replicas off draining
// brokers (planReassign, reassign.go). Every write it makes is fenced:
// its transaction also compares the election key's create revision, so a controller
// that lost the election without noticing yet cannot write.
type Controller struct {
	store *Store
	cache *Cache
	cfg   ControllerConfig

	active atomic.Bool
	stop   context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// DefaultRebalanceInterval is the default ControllerConfig.RebalanceInterval
// (leader.imbalance.check.interval.seconds), shared with the broker's settings.
const DefaultRebalanceInterval = 5 * time.Minute

// StartController starts campaigning; Close stops it.
func StartController(store *Store, cache *Cache, cfg ControllerConfig) *Controller {
	if cfg.RebalanceInterval <= 0 {
		cfg.RebalanceInterval = DefaultRebalanceInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Controller{store: store, cache: cache, cfg: cfg, stop: cancel, done: make(chan struct{})}
	go c.run(ctx)
	return c
}

// Active reports whether this broker is the controller now.
func (c *Controller) Active() bool { return c.active.Load() }

// ControllerID returns the broker id of the current controller, read from etcd, or
// NoLeader when there is none.
func (s *Store) ControllerID(ctx context.Context) (int32, error) {
	resp, err := s.client.Get(ctx, prefixController, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(1))
	if err != nil {
		return NoLeader, err
	}
	if len(resp.Kvs) == 0 {
		return NoLeader, nil
	}
	return parseBrokerID(string(resp.Kvs[0].Value))
}

// closeWait bounds how long Close waits for the campaign to end: a campaign
// cancelled while waiting resigns with the etcd client's own context
// (concurrency.Election.Campaign), which without quorum waits until the client
// closes.
const closeWait = 3 * time.Second

// Close stops campaigning and resigns. If resigning cannot finish (etcd has no
// quorum) it returns after closeWait; the campaign then ends when the etcd client
// closes, and the candidacy key expires with the broker's lease.
func (c *Controller) Close() error {
	c.once.Do(func() { c.stop() })
	select {
	case <-c.done:
		return nil
	case <-time.After(closeWait):
		c.cfg.Logger.Warn("controller candidacy not withdrawn (no etcd quorum?); it expires with the broker session", "waited", closeWait)
		return nil
	}
}

func (c *Controller) run(ctx context.Context) {
	defer close(c.done)
	for ctx.Err() == nil {
		sess := c.cfg.Session()
		if sess == nil || !sess.Valid() {
			if !sleepCtx(ctx, 100*time.Millisecond) {
				return
			}
			continue
		}
		e := concurrency.NewElection(sess.s, prefixController)
		cctx, cancel := context.WithCancel(ctx)
		go func() { // a lost session ends the campaign and the term
			select {
			case <-sess.Done():
			case <-cctx.Done():
			}
			cancel()
		}()
		if err := e.Campaign(cctx, formatBrokerID(c.cfg.BrokerID)); err != nil {
			cancel()
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				c.cfg.Logger.Warn("controller campaign failed", "err", err)
				sleepCtx(ctx, time.Second)
			}
			continue
		}
		c.cfg.Logger.Info("elected controller", "broker_id", c.cfg.BrokerID)
		c.active.Store(true)
		c.term(cctx, clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev()))
		c.active.Store(false)
		rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = e.Resign(rctx) // best effort: the lease or its expiry ends the term anyway
		rcancel()
		cancel()
		c.cfg.Logger.Info("no longer the controller", "broker_id", c.cfg.BrokerID)
	}
}

// term is one controllership: it applies planLeaders to every new metadata snapshot
// and, every RebalanceInterval, with the preferred-leader rebalance, until ctx ends.
func (c *Controller) term(ctx context.Context, fence clientv3.Cmp) {
	rebalance := time.NewTicker(c.cfg.RebalanceInterval)
	defer rebalance.Stop()
	graceEnds := time.NewTimer(0)
	defer graceEnds.Stop()
	doRebalance := false
	for {
		snap := c.cache.Snapshot()
		planned, until := snap.graced(c.cfg.DepartGrace, time.Now())
		if !until.IsZero() {
			graceEnds.Reset(time.Until(until))
		}
		if err := c.apply(ctx, snap, planned, doRebalance, fence); err != nil {
			if errors.Is(err, ErrFenced) {
				return
			}
			if ctx.Err() != nil {
				return
			}
			c.cfg.Logger.Warn("controller write failed; retrying", "err", err)
			if !sleepCtx(ctx, 500*time.Millisecond) {
				return
			}
			continue
		}
		doRebalance = false
		select {
		case <-snap.Changed():
		case <-graceEnds.C:
		case <-rebalance.C:
			doRebalance = c.cfg.AutoRebalance
		case <-ctx.Done():
			return
		}
	}
}

// apply writes the leadership changes planned from planned (snap with the brokers
// still in their departure grace) and the reassignment steps planned from snap.
func (c *Controller) apply(ctx context.Context, snap, planned *Snapshot, rebalance bool, fence clientv3.Cmp) error {
	plan := planLeaders(planned, rebalance)
	changes := make([]PartitionChange, len(plan))
	for i, ch := range plan {
		changes[i] = PartitionChange{Topic: ch.topic, Partition: ch.partition, Expected: ch.expected, Next: ch.next}
	}
	outcomes, rev, err := c.store.AlterPartitions(ctx, changes, fence)
	if err != nil {
		return err
	}
	for i, ch := range plan {
		next, err := outcomes[i].State, outcomes[i].Err
		switch {
		case errors.Is(err, ErrStalePartitionEpoch), errors.Is(err, ErrUnknownTopic), errors.Is(err, ErrUnknownPartition):
			continue // the state moved on; the next snapshot decides again
		case err != nil:
			return err
		}
		c.cfg.Logger.Info("partition leadership changed", "topic", ch.topic, "partition", ch.partition,
			"leader", next.Leader, "leader_epoch", next.LeaderEpoch, "isr", next.ISR,
			"isr_broker_epochs", next.ISREpochs, "reason", ch.reason, "brokers", brokerEpochs(snap),
			"was_isr", ch.prev.ISR, "was_isr_broker_epochs", ch.prev.ISREpochs)
	}
	steps, finished := planReassign(snap)
	for _, st := range steps {
		r, err := c.store.SetReplicas(ctx, st.topic, st.partition, st.replicas, st.next, fence)
		switch {
		case errors.Is(err, ErrStalePartitionEpoch), errors.Is(err, ErrUnknownPartition), errors.Is(err, ErrInvalidPartitionState):
			continue // the next snapshot decides again
		case err != nil:
			return err
		}
		rev = max(rev, r)
		c.cfg.Logger.Info("partition reassignment", "topic", st.topic, "partition", st.partition,
			"replicas", st.replicas, "reason", st.reason)
	}
	marks := electionMarks(snap)
	maps.Copy(marks, finished)
	if len(marks) > 0 {
		if rev > 0 {
			// The marks go once the changes they asked for are in the cache, so a
			// broker waiting for the outcome sees the change before the mark leaves.
			if err := c.cache.WaitRevision(ctx, rev); err != nil {
				return err
			}
		}
		r, err := c.clearMarks(ctx, marks, fence)
		if err != nil {
			return err
		}
		rev = max(rev, r)
	}
	if rev > 0 {
		// Do not plan again from a snapshot that misses our own writes.
		return c.cache.WaitRevision(ctx, rev)
	}
	return nil
}

func formatBrokerID(id int32) string { return strconv.FormatInt(int64(id), 10) }

func parseBrokerID(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return NoLeader, fmt.Errorf("%w: controller value %q", ErrCorrupt, s)
	}
	return int32(n), nil
}

// brokerEpochs lists the live brokers' epochs as "id@epoch", for log lines.
func brokerEpochs(snap *Snapshot) []string {
	var out []string
	for _, b := range snap.Brokers() {
		out = append(out, fmt.Sprintf("%d@%d", b.ID, b.Epoch))
	}
	return out
}
