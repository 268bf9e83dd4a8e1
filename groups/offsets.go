package groups

// Committed offsets: OffsetCommit appends, OffsetFetch reads Pebble, OffsetDelete
// appends tombstones.

import (
	"context"
	"time"

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
	var parts []commitPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			cp := commitPartition{topic: t.Topic, partition: p.Partition, offset: p.Offset, leaderEpoch: p.LeaderEpoch, metadata: p.Metadata, timestamp: -1}
			if req.Version == 1 {
				cp.timestamp = p.Timestamp
			}
			if req.Version < 6 {
				cp.leaderEpoch = -1
			}
			parts = append(parts, cp)
		}
	}
	codes := make([]int16, len(parts))
	defer func() {
		i := 0
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, codes[i]
				rt.Partitions = append(rt.Partitions, rp)
				i++
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}()

	if c.isShareGroup(req.Group) { // Kafka: "Group G is not a consumer group."
		fillCodes(codes, kerr.GroupIDNotFound.Code)
		return resp
	}
	g, code := c.lockGroup(req.Group, req.Generation < 0)
	switch {
	case code != 0:
		fillCodes(codes, code)
		return resp
	case g == nil:
		// A group this coordinator does not know, with a generation: a member of a
		// generation that is gone (the group expired or was deleted). v9+ says so
		// (both protocols understand it), older versions keep ILLEGAL_GENERATION.
		code = kerr.IllegalGeneration.Code
		if req.Version >= 9 {
			code = kerr.GroupIDNotFound.Code
		}
		fillCodes(codes, code)
		return resp
	}
	code = 0
	var m *member
	switch {
	case g.cg != nil:
		code = g.consumerCommitCodeLocked(req.MemberID, req.Generation, parts, req.Version, false)
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
		fillCodes(codes, code)
		return resp
	}
	if m != nil {
		g.heartbeatLocked(m)
	}

	recs := c.commitRecords(req.Group, c.clock.Now(), parts, codes)
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
	if err != nil {
		c.logger.Warn("group coordinator: offset commit failed", "group", req.Group, "err", err)
	}
	settleCodes(codes, waitCode(ctx, err))
	return resp
}

// commitPartition is one partition of an OffsetCommit or TxnOffsetCommit.
type commitPartition struct {
	topic       string
	partition   int32
	offset      int64
	leaderEpoch int32 // -1: none
	metadata    *string
	timestamp   int64 // the client's commit timestamp (OffsetCommit v1), -1: now
}

// commitRecords checks each partition of a commit and returns the records of
// those accepted; codes (one per partition) get the refusals, and -1 where a
// record was made (settleCodes sets those once it is written).
func (c *Coordinator) commitRecords(group string, now time.Time, parts []commitPartition, codes []int16) []batch.Record {
	var recs []batch.Record
	for i, p := range parts {
		count, known := int32(0), true
		if c.cfg.TopicPartitions != nil {
			count, known = c.cfg.TopicPartitions(p.topic)
		}
		switch {
		case c.cfg.TopicPartitions != nil && (!known || p.partition < 0 || p.partition >= count):
			codes[i] = kerr.UnknownTopicOrPartition.Code
		case p.metadata != nil && len(*p.metadata) > c.cfg.MaxMetadataBytes:
			codes[i] = kerr.OffsetMetadataTooLarge.Code
		default:
			o := offsets.GroupOffset{Group: group, Topic: p.topic, Partition: p.partition,
				Offset: p.offset, LeaderEpoch: p.leaderEpoch, CommitTimestamp: now.UnixMilli()}
			if p.metadata != nil {
				o.Metadata = *p.metadata
			}
			if p.timestamp >= 0 {
				o.CommitTimestamp = p.timestamp
			}
			recs = append(recs, commitRecord(o))
			codes[i] = -1 // pending the append
		}
	}
	return recs
}

// fillCodes sets every code to code.
func fillCodes(codes []int16, code int16) {
	for i := range codes {
		codes[i] = code
	}
}

// settleCodes sets the codes still pending (-1) to code.
func settleCodes(codes []int16, code int16) {
	for i := range codes {
		if codes[i] == -1 {
			codes[i] = code
		}
	}
}

// OffsetFetchMemberCode checks the member id and epoch of a group in an
// OffsetFetch v9+ (Kafka's validateOffsetFetch): a consumer group's member must be
// at its current epoch (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH); classic groups and
// groups this coordinator does not hold in memory are not checked.
func (c *Coordinator) OffsetFetchMemberCode(group string, memberID *string, epoch int32) int16 {
	g, code := c.lockGroup(group, false)
	if code != 0 || g == nil {
		return code
	}
	defer g.mu.Unlock()
	if g.cg == nil {
		return 0
	}
	return g.consumerFetchCodeLocked(memberID, epoch)
}

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
		if req.RequireStable {
			if pending, err := sh.store.GroupPending(req.Group); err != nil || pending {
				resp.ErrorCode = kerr.UnstableOffsetCommit.Code
				if err != nil {
					resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
				}
				return resp
			}
		}
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
				if err == nil && req.RequireStable {
					var pending bool
					if pending, err = sh.store.Pending(req.Group, t.Topic, p); err == nil && pending {
						rp.ErrorCode = kerr.UnstableOffsetCommit.Code
						rt.Partitions = append(rt.Partitions, rp)
						continue
					}
				}
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
