package groups

// Committed offsets: OffsetCommit appends, OffsetFetch reads Pebble, OffsetDelete
// appends tombstones.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
	"skiff/offsets"
)

// OffsetCommit handles an OffsetCommit request. Members commit with their
// generation; a client outside group management (a "simple" consumer, or an admin
// tool) commits with generation -1 to a group without members. The answer comes once
// the commit is applied to Pebble, so an OffsetFetch right after sees it.
func (c *Coordinator) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	codes := make([][]int16, len(req.Topics))
	for i, t := range req.Topics {
		codes[i] = make([]int16, len(t.Partitions))
	}
	all := func(code int16) {
		for i := range codes {
			for j := range codes[i] {
				codes[i][j] = code
			}
		}
	}
	defer func() {
		for i, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, codes[i][j]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}()

	g, code := c.lockGroup(req.Group, req.Generation < 0)
	switch {
	case code != 0:
		all(code)
		return resp
	case g == nil:
		// A group this coordinator does not know, with a generation: a member of a
		// generation that is gone (the group expired or was deleted).
		all(kerr.IllegalGeneration.Code)
		return resp
	}
	code = 0
	var m *member
	switch {
	case g.cg != nil:
		code = g.consumerCommitCodeLocked(req)
	case g.fencedLocked(req.InstanceID, req.MemberID):
		code = kerr.FencedInstanceID.Code
	case req.Generation < 0 && g.state == stateEmpty:
		// Offsets only: no membership to check.
	case g.state == stateCompletingRebalance:
		code = kerr.RebalanceInProgress.Code
	case g.members[req.MemberID] == nil:
		code = kerr.UnknownMemberID.Code
	case req.Generation != g.generation:
		code = kerr.IllegalGeneration.Code
	default:
		m = g.members[req.MemberID]
	}
	if code != 0 {
		g.mu.Unlock()
		all(code)
		return resp
	}
	if m != nil {
		g.heartbeatLocked(m)
	}

	now := c.clock.Now()
	var recs []batch.Record
	for i, t := range req.Topics {
		count, known := int32(0), true
		if c.cfg.TopicPartitions != nil {
			count, known = c.cfg.TopicPartitions(t.Topic)
		}
		for j, p := range t.Partitions {
			switch {
			case c.cfg.TopicPartitions != nil && (!known || p.Partition < 0 || p.Partition >= count):
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			case p.Metadata != nil && len(*p.Metadata) > c.cfg.MaxMetadataBytes:
				codes[i][j] = kerr.OffsetMetadataTooLarge.Code
			default:
				o := offsets.GroupOffset{Group: req.Group, Topic: t.Topic, Partition: p.Partition,
					Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, CommitTimestamp: now.UnixMilli()}
				if p.Metadata != nil {
					o.Metadata = *p.Metadata
				}
				if req.Version == 1 && p.Timestamp >= 0 {
					o.CommitTimestamp = p.Timestamp
				}
				if req.Version < 6 {
					o.LeaderEpoch = -1
				}
				recs = append(recs, commitRecord(o))
				codes[i][j] = -1 // pending the append
			}
		}
	}
	var last int64
	var err error
	if len(recs) > 0 {
		last, err = g.appendLocked(recs)
		if err == nil {
			g.hasOffsets = true
		}
	}
	sh := g.sh
	g.mu.Unlock()
	if len(recs) == 0 {
		return resp
	}
	if err == nil {
		err = sh.waitApplied(ctx, last)
	}
	code = waitCode(ctx, err)
	if err != nil {
		c.logger.Warn("group coordinator: offset commit failed", "group", req.Group, "err", err)
	}
	for i := range codes {
		for j := range codes[i] {
			if codes[i][j] == -1 {
				codes[i][j] = code
			}
		}
	}
	return resp
}

// OffsetFetch handles an OffsetFetch request from Pebble: the listed partitions, or
// every committed offset of the group when the list is null (v2+). A partition
// without a commit gets offset -1 and no error. v0 and v1 report a coordinator
// error per partition, v2+ at the top.
func (c *Coordinator) OffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	sh, code := c.shardFor(req.Group)
	part := func(p int32) kmsg.OffsetFetchResponseTopicPartition {
		rp := kmsg.NewOffsetFetchResponseTopicPartition()
		rp.Partition, rp.Offset, rp.Metadata = p, -1, kmsg.StringPtr("")
		return rp
	}
	set := func(rp *kmsg.OffsetFetchResponseTopicPartition, o offsets.GroupOffset) {
		rp.Offset, rp.LeaderEpoch = o.Offset, o.LeaderEpoch
		md := o.Metadata
		rp.Metadata = &md
	}
	if code == 0 && req.Topics == nil && req.Version >= 2 {
		byTopic := make(map[string]int)
		err := sh.store.GroupOffsets(req.Group, func(o offsets.GroupOffset) error {
			i, ok := byTopic[o.Topic]
			if !ok {
				i = len(resp.Topics)
				byTopic[o.Topic] = i
				resp.Topics = append(resp.Topics, kmsg.OffsetFetchResponseTopic{Topic: o.Topic})
			}
			rp := part(o.Partition)
			set(&rp, o)
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
			return nil
		})
		if err != nil {
			c.logger.Error("group coordinator: read offsets", "group", req.Group, "err", err)
			resp.Topics = nil
			code = kerr.CoordinatorNotAvailable.Code
		}
		resp.ErrorCode = code
		return resp
	}
	for _, t := range req.Topics {
		rt := kmsg.OffsetFetchResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rp := part(p)
			if code == 0 {
				o, ok, err := sh.store.Offset(req.Group, t.Topic, p)
				switch {
				case err != nil:
					c.logger.Error("group coordinator: read offset", "group", req.Group, "topic", t.Topic, "partition", p, "err", err)
					rp.ErrorCode = kerr.UnknownServerError.Code
				case ok:
					set(&rp, o)
				}
			} else if req.Version < 2 {
				rp.ErrorCode = code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Version >= 2 {
		resp.ErrorCode = code
	}
	return resp
}

// OffsetDelete handles an OffsetDelete request: the committed offsets of the named
// partitions are deleted (tombstones in the log), except for topics that a member
// of an active consumer group subscribes to (GROUP_SUBSCRIBED_TO_TOPIC).
func (c *Coordinator) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	g, code := c.lockGroup(req.Group, false)
	switch {
	case code != 0:
		resp.ErrorCode = code
		return resp
	case g == nil:
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	var subscribed map[string]bool
	if g.state != stateEmpty {
		if g.protocolType != "consumer" {
			g.mu.Unlock()
			resp.ErrorCode = kerr.NonEmptyGroup.Code
			return resp
		}
		subscribed = g.subscribedTopicsLocked()
	}
	var recs []batch.Record
	for _, t := range req.Topics {
		rt := kmsg.OffsetDeleteResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rp := kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition}
			if subscribed[t.Topic] {
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			} else if _, ok, err := g.sh.store.Offset(req.Group, t.Topic, p.Partition); err != nil {
				rp.ErrorCode = kerr.UnknownServerError.Code
			} else if ok {
				recs = append(recs, commitTombstone(req.Group, t.Topic, p.Partition))
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	var last int64
	var err error
	if len(recs) > 0 {
		last, err = g.appendLocked(recs)
	}
	sh := g.sh
	g.mu.Unlock()
	if len(recs) == 0 {
		return resp
	}
	if err == nil {
		err = sh.waitApplied(ctx, last)
	}
	if code := waitCode(ctx, err); code != 0 {
		resp.ErrorCode = code
		resp.Topics = nil
	}
	return resp
}

// subscribedTopicsLocked is the union of the topics the members of a consumer
// group subscribe to, read from their metadata for the selected protocol (Kafka's
// ConsumerProtocolSubscription). Members whose metadata does not parse count as
// subscribing to nothing.
func (g *group) subscribedTopicsLocked() map[string]bool {
	out := make(map[string]bool)
	for _, m := range g.members {
		meta := m.metadataFor(g.protocol)
		if meta == nil && len(m.protocols) > 0 {
			meta = m.protocols[0].metadata
		}
		var s kmsg.ConsumerMemberMetadata
		if s.ReadFrom(meta) != nil {
			continue
		}
		for _, t := range s.Topics {
			out[t] = true
		}
	}
	return out
}
