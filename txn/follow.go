package txn

// Appliers keep the store of every local replica of __transaction_state current
// with its committed records, whether the replica leads or follows, so that an
// election here applies only what came after (store.go).

import (
	"errors"

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

// Follow applies partition id's committed records to its store in the
// background, as they are committed. Following a partition already followed
// with the same log does nothing.
func (c *Coordinator) Follow(id int32, log FollowLog) { c.followers.Follow(id, log, nil) }

// Unfollow stops applying partition id; it returns once the applier is done.
func (c *Coordinator) Unfollow(id int32) { c.followers.Unfollow(id) }

// Followed returns one more than the highest partition followed (0: none).
func (c *Coordinator) Followed() int32 { return c.followers.Followed() }

// applyFollowed is the followers' Apply.
func (c *Coordinator) applyFollowed(id int32, log FollowLog) error {
	_, err := c.apply(id, log, log.HighWatermark())
	if err != nil && !errors.Is(err, kerr.OffsetOutOfRange) {
		c.logger.Warn("transaction coordinator: applying __transaction_state failed; retrying", "partition", id, "err", err)
		return err
	}
	return nil
}
