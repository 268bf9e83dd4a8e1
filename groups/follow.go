package groups

// A follower applier keeps Pebble current with the committed records of a
// __consumer_offsets partition whose replica on this node follows, so that when this
// node is elected its coordinator serves the partition's groups at once: the
// election only applies what came after (Kafka's followers do not do this; Skiff's
// offsets live in Pebble, so it is cheap).

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/logstore"
	"skiff/replication"
)

// FollowLog is a follower replica of a __consumer_offsets partition: its committed
// records, whatever its role (a *replication.Partition).
type FollowLog interface {
	HighWatermark() int64
	LogStartOffset() int64
	ReadCommitted(offset, maxBytes int64) (*logstore.Slice, error)
	AddWaiter(ch chan<- struct{})
	RemoveWaiter(ch chan<- struct{})
}

var _ FollowLog = (*replication.Partition)(nil)

type follower struct {
	log    FollowLog
	cancel context.CancelFunc
	done   chan struct{}
}

// Follow applies partition id's committed records to Pebble in the background while
// its replica here follows. Following a partition already followed with the same log
// does nothing; a partition this node coordinates is not followed.
func (c *Coordinator) Follow(id int32, log FollowLog) {
	c.mu.Lock()
	if c.mu.closed || c.mu.shards[id] != nil {
		c.mu.Unlock()
		return
	}
	if f := c.mu.followers[id]; f != nil && f.log == log {
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.Unfollow(id)
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{log: log, cancel: cancel, done: make(chan struct{})}
	c.mu.Lock()
	if c.mu.closed || c.mu.shards[id] != nil || c.mu.followers[id] != nil {
		c.mu.Unlock()
		cancel()
		return
	}
	c.mu.followers[id] = f
	c.mu.Unlock()
	go c.follow(ctx, id, f)
}

// Unfollow stops applying partition id; it returns once the applier is done.
func (c *Coordinator) Unfollow(id int32) {
	c.mu.Lock()
	f := c.mu.followers[id]
	delete(c.mu.followers, id)
	c.mu.Unlock()
	if f != nil {
		f.cancel()
		<-f.done
	}
}

func (c *Coordinator) follow(ctx context.Context, id int32, f *follower) {
	defer close(f.done)
	wake := make(chan struct{}, 1)
	f.log.AddWaiter(wake)
	defer f.log.RemoveWaiter(wake)
	store := c.cfg.DB.GroupShard(id)
	for {
		applied, err := store.Applied()
		if err == nil && applied < f.log.HighWatermark() {
			_, err = applyLog(f.log.ReadCommitted, store, id, f.log.LogStartOffset(), applied, f.log.HighWatermark(), c.logger)
		}
		pause := time.Duration(0)
		if err != nil && !errors.Is(err, kerr.OffsetOutOfRange) {
			c.logger.Warn("group coordinator: applying a followed offsets partition failed; retrying", "partition", id, "err", err)
			pause = retryApply
		}
		var timer <-chan time.Time
		if pause > 0 {
			timer = time.After(pause)
		}
		select {
		case <-wake:
		case <-timer:
		case <-ctx.Done():
			return
		}
	}
}

// Followed returns one more than the highest partition followed (0: none), for
// stopping them all.
func (c *Coordinator) Followed() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := int32(0)
	for id := range c.mu.followers {
		n = max(n, id+1)
	}
	return n
}
