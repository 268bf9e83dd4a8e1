package groups

// Offsets of deleted topics. As in Kafka, deleting a topic deletes its
// committed offsets in every group, so that a topic created again under the
// same name is read from where auto.offset.reset says rather than from offsets
// into a log that is gone. The coordinator writes the tombstones for the groups
// of the partitions it leads: when its node sees a topic deleted
// (TopicsDeleted), and at every expiry check, for deletions it did not see
// (made while it was down or led none of those groups). A topic deleted and
// created again before either keeps its offsets, as it would have before.

import (
	"skiff/internal/batch"
	"skiff/offsets"
)

// TopicsDeleted tells the coordinator that topics were deleted: it deletes
// their committed offsets in the background.
func (c *Coordinator) TopicsDeleted() {
	if c.cfg.TopicPartitions == nil {
		return
	}
	go func() {
		c.expiryMu.Lock() // one pass at a time, and Close waits for it
		defer c.expiryMu.Unlock()
		for _, sh := range c.readyShards() {
			gone, err := c.deletedTopicOffsets(sh)
			if err != nil {
				c.logger.Warn("group coordinator: reading offsets failed", "partition", sh.id, "err", err)
				continue
			}
			c.dropOffsets(sh, gone)
		}
	}()
}

// readyShards are the loaded partitions this coordinator leads; none once it is
// closed.
func (c *Coordinator) readyShards() []*shard {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return nil
	}
	var shards []*shard
	for _, sh := range c.mu.shards {
		if sh.ready.Load() {
			shards = append(shards, sh)
		}
	}
	return shards
}

// topicGone reports whether o is of a topic that no longer exists, or of a
// partition it no longer has (it was deleted and created again with fewer).
func (c *Coordinator) topicGone(o offsets.GroupOffset) bool {
	if c.cfg.TopicPartitions == nil {
		return false
	}
	n, ok := c.cfg.TopicPartitions(o.Topic)
	return !ok || o.Partition >= n
}

// deletedTopicOffsets reads sh's offsets of deleted topics, by group.
func (c *Coordinator) deletedTopicOffsets(sh *shard) (map[string][]offsets.GroupOffset, error) {
	gone := make(map[string][]offsets.GroupOffset)
	err := sh.store.Offsets(func(o offsets.GroupOffset) error {
		if c.topicGone(o) {
			gone[o.Group] = append(gone[o.Group], o)
		}
		return nil
	})
	return gone, err
}

// dropOffsets writes tombstones for the offsets in gone, of groups in sh.
// c.expiryMu is held.
func (c *Coordinator) dropOffsets(sh *shard, gone map[string][]offsets.GroupOffset) {
	for name, offs := range gone {
		g, code := c.lockGroup(name, true)
		if code != 0 || g == nil {
			continue
		}
		if g.sh != sh {
			g.mu.Unlock()
			continue
		}
		recs := make([]batch.Record, 0, len(offs))
		for _, o := range offs {
			recs = append(recs, commitTombstone(o.Group, o.Topic, o.Partition))
		}
		if _, err := g.appendLocked(recs); err != nil {
			c.logger.Warn("group coordinator: deleting offsets of deleted topics failed", "group", name, "err", err)
		} else {
			c.logger.Info("group coordinator: deleted offsets of deleted topics", "group", name, "offsets", len(offs))
		}
		g.mu.Unlock()
	}
}
