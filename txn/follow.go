package txn

// Appliers keep the store of every local replica of __transaction_state current
// with its committed records, whether the replica leads or follows, so that an
// election here applies only what came after (store.go).

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/replication"
)

// FollowLog is a local replica of a __transaction_state partition, whatever its
// role (a *replication.Partition).
type FollowLog interface {
	committedLog
	AddWaiter(ch chan<- struct{})
	RemoveWaiter(ch chan<- struct{})
}

var _ FollowLog = (*replication.Partition)(nil)

type follower struct {
	log    FollowLog
	cancel context.CancelFunc
	done   chan struct{}
}

// Follow applies partition id's committed records to its store in the
// background, as they are committed. Following a partition already followed
// with the same log does nothing.
func (c *Coordinator) Follow(id int32, log FollowLog) {
	c.mu.Lock()
	f := c.mu.followers[id]
	if c.mu.closed || f != nil && f.log == log {
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.Unfollow(id)
	ctx, cancel := context.WithCancel(context.Background())
	f = &follower{log: log, cancel: cancel, done: make(chan struct{})}
	c.mu.Lock()
	if c.mu.closed || c.mu.followers[id] != nil {
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

// Followed returns one more than the highest partition followed (0: none).
func (c *Coordinator) Followed() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := int32(0)
	for id := range c.mu.followers {
		n = max(n, id+1)
	}
	return n
}

func (c *Coordinator) follow(ctx context.Context, id int32, f *follower) {
	defer close(f.done)
	wake := make(chan struct{}, 1)
	f.log.AddWaiter(wake)
	defer f.log.RemoveWaiter(wake)
	for {
		_, err := c.apply(id, f.log, f.log.HighWatermark())
		var retry <-chan time.Time
		if err != nil && !errors.Is(err, kerr.OffsetOutOfRange) {
			c.logger.Warn("transaction coordinator: applying __transaction_state failed; retrying", "partition", id, "err", err)
			retry = time.After(retryLoad)
		}
		select {
		case <-wake:
		case <-retry:
		case <-ctx.Done():
			return
		}
	}
}
