package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Cache is an in-memory copy of everything under /skiff/, fed by an etcd
// watch. Reads (Snapshot and the shortcuts below) are lock-free loads of an
// immutable Snapshot and are meant for hot paths (every Metadata and
// Produce request). A single goroutine applies watch events and publishes a
// new snapshot per etcd watch response; a transaction's events always
// arrive in one response, so a snapshot never shows half a transaction.
//
// If the watch ends (history compacted past the cache's revision, the
// member lost its leader, or the stream failed) the cache lists /skiff/
// again and resumes watching from the listed revision; readers keep the
// last snapshot meanwhile.
type Cache struct {
	client *clientv3.Client
	logger *slog.Logger
	snap   atomic.Pointer[Snapshot]

	cancel    context.CancelFunc
	closed    chan struct{} // closed by Close
	done      chan struct{} // closed when the watch goroutine exits
	closeOnce sync.Once
}

// StartCache lists /skiff/ (blocking until done or ctx ends) and then keeps
// the cache current in the background until Close. logger nil means
// slog.Default().
func StartCache(ctx context.Context, client *clientv3.Client, logger *slog.Logger) (*Cache, error) {
	if logger == nil {
		logger = slog.Default()
	}
	c := &Cache{client: client, logger: logger, closed: make(chan struct{}), done: make(chan struct{})}
	s, err := c.list(ctx)
	if err != nil {
		return nil, err
	}
	c.snap.Store(s)
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go c.run(runCtx)
	return c, nil
}

// Close stops the watch. Snapshots stay readable; waiters get
// ErrCacheClosed. Idempotent.
func (c *Cache) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.cancel()
		<-c.done
	})
	return nil
}

// Snapshot returns the current snapshot. Use one snapshot for reads that
// must agree with each other (a Metadata answer).
func (c *Cache) Snapshot() *Snapshot { return c.snap.Load() }

// Revision is Snapshot().Revision().
func (c *Cache) Revision() int64 { return c.Snapshot().Revision() }

// ClusterID is Snapshot().ClusterID().
func (c *Cache) ClusterID() string { return c.Snapshot().ClusterID() }

// Topic is Snapshot().Topic(name).
func (c *Cache) Topic(name string) (Topic, bool) { return c.Snapshot().Topic(name) }

// Topics is Snapshot().Topics().
func (c *Cache) Topics() []Topic { return c.Snapshot().Topics() }

// Partition is Snapshot().Partition(topic, p).
func (c *Cache) Partition(topic string, p int32) (PartitionState, bool) {
	return c.Snapshot().Partition(topic, p)
}

// Brokers is Snapshot().Brokers().
func (c *Cache) Brokers() []Broker { return c.Snapshot().Brokers() }

// Broker is Snapshot().Broker(id).
func (c *Cache) Broker(id int32) (Broker, bool) { return c.Snapshot().Broker(id) }

// Changed returns a channel closed at the next change of the snapshot. To
// not miss a change, read the snapshot first and wait on its Changed.
func (c *Cache) Changed() <-chan struct{} { return c.Snapshot().Changed() }

// WaitRevision waits until the cache reflects etcd revision rev (for
// example, the revision a Store write returned), ctx ends, or the cache is
// closed (ErrCacheClosed).
func (c *Cache) WaitRevision(ctx context.Context, rev int64) error {
	var (
		timer *time.Timer
		tick  <-chan time.Time
		every = 20 * time.Millisecond
	)
	for {
		s := c.Snapshot()
		if s.rev >= rev {
			if timer != nil {
				timer.Stop()
			}
			return nil
		}
		if timer == nil {
			// Without events under /skiff/, the watch reports progress only
			// every few minutes: ask etcd for a progress report now, and
			// again (backing off to 1 s) while waiting, since a request made
			// while the watch is being set up or catching up is dropped. An
			// error only means no report comes; the next request may work.
			timer = time.NewTimer(every)
			tick = timer.C
			_ = c.client.RequestProgress(clientv3.WithRequireLeader(ctx))
		}
		select {
		case <-s.changed:
		case <-tick:
			_ = c.client.RequestProgress(clientv3.WithRequireLeader(ctx))
			every = min(2*every, time.Second)
			timer.Reset(every)
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("cluster: wait for revision %d (cache at %d): %w", rev, s.rev, context.Cause(ctx))
		case <-c.closed:
			timer.Stop()
			return ErrCacheClosed
		}
	}
}

// Sync waits until the cache reflects everything etcd had committed when Sync was
// called (a linearizable read, so it needs etcd's quorum), and returns that
// revision: after it, the cache is as current as a read of etcd would have been. It
// fails when ctx ends or the cache is closed (ErrCacheClosed).
func (c *Cache) Sync(ctx context.Context) (int64, error) {
	resp, err := c.client.Get(clientv3.WithRequireLeader(ctx), keyCluster, clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("cluster: read the current revision: %w", err)
	}
	rev := resp.Header.Revision
	return rev, c.WaitRevision(ctx, rev)
}

// Subscribe returns a subscription starting from an empty view: its first
// Next reports every existing topic and broker as created/registered.
func (c *Cache) Subscribe() *Subscription {
	return &Subscription{c: c, last: emptySnapshot}
}

// Subscription turns cache changes into Events for one consumer (the
// replication layer learns about topics created and deleted through it).
// It is pull-based: the cache never waits for a subscriber, and a slow
// subscriber gets the combined difference of everything it missed
// (Diff(last snapshot it saw, current)), never a lost or stale event. Not
// safe for concurrent use.
type Subscription struct {
	c    *Cache
	last *Snapshot
}

// Next waits until the cache differs from the snapshot this subscription
// last returned, and returns the events between them and the new snapshot.
// It returns an error only when ctx ends or the cache is closed.
func (s *Subscription) Next(ctx context.Context) ([]Event, *Snapshot, error) {
	for {
		cur := s.c.Snapshot()
		if cur != s.last {
			evs := Diff(s.last, cur)
			s.last = cur
			if len(evs) > 0 {
				return evs, cur, nil
			}
		}
		select {
		case <-cur.changed:
		case <-ctx.Done():
			return nil, nil, context.Cause(ctx)
		case <-s.c.closed:
			return nil, nil, ErrCacheClosed
		}
	}
}

// list reads everything under /skiff/ into a new snapshot.
func (c *Cache) list(ctx context.Context) (*Snapshot, error) {
	// Require a leader: a member cut off from its cluster fails at once
	// (and the loop retries) instead of blocking until a server timeout.
	resp, err := c.client.Get(clientv3.WithRequireLeader(ctx), Prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cluster: list %s: %w", Prefix, err)
	}
	b := newBuilder(emptySnapshot, c.logger)
	b.topicSetDirty = true
	for _, kv := range resp.Kvs {
		b.apply(kv, false)
	}
	return b.build(resp.Header.Revision), nil
}

func (c *Cache) publish(s *Snapshot) {
	old := c.snap.Swap(s)
	close(old.changed)
}

// errWatchEnded: the watch channel closed without an error response.
var errWatchEnded = errors.New("watch ended")

// run keeps the cache current until ctx is cancelled.
func (c *Cache) run(ctx context.Context) {
	defer close(c.done)
	for {
		err := c.watch(ctx)
		if ctx.Err() != nil {
			return
		}
		c.logger.Warn("metadata watch ended; listing again", "revision", c.Snapshot().rev, "err", err)
		for attempt := 0; ; attempt++ {
			if attempt > 0 && !sleepCtx(ctx, backoff(attempt)) {
				return
			}
			s, err := c.list(ctx)
			if err == nil {
				c.publish(s)
				break
			}
			if ctx.Err() != nil {
				return
			}
			c.logger.Warn("listing metadata failed", "attempt", attempt+1, "err", err)
		}
	}
}

// watch applies watch responses from the current revision on, and returns
// why the watch ended.
func (c *Cache) watch(ctx context.Context) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	from := c.Snapshot().rev + 1
	wch := c.client.Watch(clientv3.WithRequireLeader(wctx), Prefix,
		clientv3.WithPrefix(), clientv3.WithRev(from), clientv3.WithProgressNotify())
	for wr := range wch {
		if wr.CompactRevision != 0 {
			return fmt.Errorf("history compacted to revision %d: %w", wr.CompactRevision, wr.Err())
		}
		if err := wr.Err(); err != nil {
			return err
		}
		cur := c.Snapshot()
		if len(wr.Events) == 0 {
			// Only a progress report says that everything up to its header
			// revision has been delivered. The "created" response does not:
			// its header is the store's revision while older events may
			// still be on their way.
			if wr.IsProgressNotify() && wr.Header.Revision > cur.rev {
				next := *cur
				next.rev, next.changed = wr.Header.Revision, make(chan struct{})
				c.publish(&next)
			}
			continue
		}
		b := newBuilder(cur, c.logger)
		rev := cur.rev
		for _, ev := range wr.Events {
			b.apply(ev.Kv, ev.Type == mvccpb.DELETE)
			rev = max(rev, ev.Kv.ModRevision)
		}
		c.publish(b.build(rev))
	}
	return errWatchEnded
}

// backoff is the pause before re-list attempt n (n >= 1): 50 ms doubling
// up to 2 s.
func backoff(n int) time.Duration {
	d := 50 * time.Millisecond << min(n-1, 6)
	return min(d, 2*time.Second)
}

// sleepCtx pauses for d (retry pacing); false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
