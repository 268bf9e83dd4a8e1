package groups

// Offset expiry, every RetentionCheckInterval:
//
//   - The committed offsets of deleted topics are deleted (deleted_topics.go).
//   - The committed offsets of a group without members are deleted once the group
//     has been empty for OffsetsRetention (offsets.retention.minutes); for a group
//     that never had members (only commits with generation -1), once each commit is
//     that old. An empty group with no offsets left is deleted. Deletes are
//     tombstones in the log, applied to Pebble like any record.
//
// __consumer_offsets is compacted (cleanup.policy=compact): the log cleaner keeps
// the latest record of every commit and group, so a live one is never written
// again, and a tombstone takes its key out of the log after delete.retention.ms.

import (
	"time"

	"skiff/internal/batch"
	"skiff/offsets"
)

func (c *Coordinator) expiryTick() {
	c.expiryMu.Lock()
	defer c.expiryMu.Unlock()
	now := c.clock.Now()
	for _, sh := range c.readyShards() {
		if err := c.expire(sh, now); err != nil {
			c.logger.Warn("group coordinator: offset expiry failed", "partition", sh.id, "err", err)
		}
	}
	c.mu.Lock()
	if !c.mu.closed {
		stopTimer(c.mu.expiry) // one chain of ticks, also after SetOffsetsRetention
		c.mu.expiry = c.clock.AfterFunc(time.Duration(c.checkInterval.Load()), c.expiryTick)
	}
	c.mu.Unlock()
}

// expire runs the expiry of one shard at time now.
func (c *Coordinator) expire(sh *shard, now time.Time) error {
	byGroup := make(map[string][]offsets.GroupOffset)
	gone := make(map[string][]offsets.GroupOffset) // of deleted topics
	if err := sh.store.Offsets(func(o offsets.GroupOffset) error {
		if c.topicGone(o) {
			gone[o.Group] = append(gone[o.Group], o)
		} else {
			byGroup[o.Group] = append(byGroup[o.Group], o)
		}
		return nil
	}); err != nil {
		return err
	}
	c.dropOffsets(sh, gone)
	c.mu.Lock()
	for _, g := range c.mu.groups {
		if _, ok := byGroup[g.name]; !ok && g.sh == sh {
			byGroup[g.name] = nil // a group without offsets
		}
	}
	c.mu.Unlock()
	sh.mu.Lock()
	applied := sh.mu.applied
	sh.mu.Unlock()
	for name, offs := range byGroup {
		g, code := c.lockGroup(name, len(offs) > 0)
		if code != 0 || g == nil {
			continue
		}
		if g.sh != sh {
			g.mu.Unlock()
			continue
		}
		c.expireGroupLocked(g, offs, now, applied)
		g.mu.Unlock()
	}
	return nil
}

func (c *Coordinator) expireGroupLocked(g *group, offs []offsets.GroupOffset, now time.Time, applied int64) {
	// Offsets read before a commit of this group was applied may be stale.
	if g.state != stateEmpty || g.lastAppend >= applied {
		return
	}
	var kept, expired []offsets.GroupOffset
	for _, o := range offs {
		base := o.CommitTimestamp
		if g.protocolType != "" {
			base = g.stateSince.UnixMilli() // empty since then
		}
		if now.UnixMilli()-base >= time.Duration(c.offsetsRetention.Load()).Milliseconds() {
			expired = append(expired, o)
		} else {
			kept = append(kept, o)
		}
	}
	if len(kept) == 0 {
		recs, _ := g.tombstonesLocked(expired)
		if _, err := g.appendLocked(recs); err != nil {
			c.logger.Warn("group coordinator: expiring group failed", "group", g.name, "err", err)
			return
		}
		c.logger.Info("group coordinator: expired empty group", "group", g.name, "offsets", len(expired))
		c.removeLocked(g)
		return
	}
	if len(expired) == 0 {
		return
	}
	var recs []batch.Record
	for _, o := range expired {
		recs = append(recs, commitTombstone(o.Group, o.Topic, o.Partition))
	}
	if _, err := g.appendLocked(recs); err != nil {
		c.logger.Warn("group coordinator: offset expiry failed", "group", g.name, "err", err)
		return
	}
	c.logger.Info("group coordinator: expired offsets", "group", g.name, "offsets", len(expired))
}
