package groups

// A follower applier keeps Pebble current with the committed records of a
// __consumer_offsets partition whose replica on this node follows, so that when this
// node is elected its coordinator serves the partition's groups at once: the
// election only applies what came after (Kafka's followers do not do this; Skiff's
// offsets live in Pebble, so it is cheap).

import (
	"errors"

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

// Follow applies partition id's committed records to Pebble in the background while
// its replica here follows. Following a partition already followed with the same log
// does nothing; a partition this node coordinates is not followed.
func (c *Coordinator) Follow(id int32, log FollowLog) {
	c.followers.Follow(id, log, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return !c.mu.closed && c.mu.shards[id] == nil
	})
}

// Unfollow stops applying partition id; it returns once the applier is done.
func (c *Coordinator) Unfollow(id int32) { c.followers.Unfollow(id) }

// Followed returns one more than the highest partition followed (0: none), for
// stopping them all.
func (c *Coordinator) Followed() int32 { return c.followers.Followed() }

// applyFollowed is the followers' Apply.
func (c *Coordinator) applyFollowed(id int32, log FollowLog) error {
	store := c.cfg.DB.GroupShard(id)
	applied, err := store.Applied()
	if err == nil && applied < log.HighWatermark() {
		_, err = applyLog(log.ReadCommitted, store, id, log.LogStartOffset(), applied, log.HighWatermark(), c.logger)
	}
	if err != nil && !errors.Is(err, kerr.OffsetOutOfRange) {
		c.logger.Warn("group coordinator: applying a followed offsets partition failed; retrying", "partition", id, "err", err)
		return err
	}
	return nil
}
