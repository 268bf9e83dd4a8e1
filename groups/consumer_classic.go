package groups

// Classic members in a KIP-848 consumer group: KIP-848's online upgrade and
// downgrade, as Kafka's GroupMetadataManager does them, governed by
// group.consumer.migration.policy.
//
// Upgrade: the first consumer-protocol member to join a classic group with
// members (embedded protocol "consumer") turns it into a consumer group; each
// classic member becomes a member at the group's generation owning its current
// assignment. Downgrade: when the last consumer-protocol member leaves (or is
// fenced) and classic members remain, the group turns classic again and
// rebalances.
//
// A classic member of a consumer group is served through JoinGroup, SyncGroup,
// Heartbeat and LeaveGroup with the server assignor's assignment: a JoinGroup is
// its heartbeat (its subscription and owned partitions decoded from the embedded
// consumer protocol) and is answered at once with its member epoch as the
// generation and no leader; SyncGroup hands out its current assignment, without
// the partitions it must revoke; Heartbeat answers REBALANCE_IN_PROGRESS whenever
// it should join again to move on (the group epoch moved, it must revoke, or the
// partitions it waits for are free).

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
)

// The values of group.consumer.migration.policy.
const (
	MigrationBidirectional = "bidirectional"
	MigrationUpgrade       = "upgrade"
	MigrationDowngrade     = "downgrade"
	MigrationDisabled      = "disabled"
	// DefaultConsumerMigrationPolicy is Kafka's default.
	DefaultConsumerMigrationPolicy = MigrationBidirectional
)

// MigrationPolicies are the values group.consumer.migration.policy takes.
var MigrationPolicies = []string{MigrationBidirectional, MigrationUpgrade, MigrationDowngrade, MigrationDisabled}

// classicProtocolType is the only embedded protocol a consumer group serves.
const classicProtocolType = "consumer"

// classicMeta is what a consumer group keeps of a member using the classic
// protocol (Kafka's ClassicMemberMetadata).
type classicMeta struct {
	session   time.Duration
	protocols []protocol // as it sent them; the first names the protocol it is told
}

func (c *Coordinator) upgradeAllowed() bool {
	p := c.cfg.ConsumerMigrationPolicy
	return p == MigrationBidirectional || p == MigrationUpgrade
}

func (c *Coordinator) downgradeAllowed() bool {
	p := c.cfg.ConsumerMigrationPolicy
	return p == MigrationBidirectional || p == MigrationDowngrade
}

// decodeSubscription reads the embedded consumer protocol of a classic member.
func decodeSubscription(meta []byte) (*kmsg.ConsumerMemberMetadata, bool) {
	var s kmsg.ConsumerMemberMetadata
	if err := s.ReadFrom(meta); err != nil {
		return nil, false
	}
	return &s, true
}

// supportsClassicLocked is Kafka's supportsClassicProtocols: the embedded
// protocol is "consumer" and every classic member shares one protocol name with
// ps.
func (cg *consumerGroup) supportsClassic(pt string, ps []protocol) bool {
	if pt != classicProtocolType || len(ps) == 0 {
		return false
	}
	for _, m := range cg.members {
		if m.classic == nil {
			continue
		}
		if !slices.ContainsFunc(m.classic.protocols, func(a protocol) bool {
			return slices.ContainsFunc(ps, func(b protocol) bool { return a.name == b.name })
		}) {
			return false
		}
	}
	return true
}

// classicJoinLocked serves a classic member's JoinGroup to a consumer group with
// members; it returns the answer and the records to append before it is sent.
func (g *group) classicJoinLocked(cl Client, req *kmsg.JoinGroupRequest, session, rebalance time.Duration) (*kmsg.JoinGroupResponse, []batch.Record) {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.Generation, resp.MemberID, resp.Protocol = -1, req.MemberID, kmsg.StringPtr("")
	fail := func(code int16) (*kmsg.JoinGroupResponse, []batch.Record) {
		resp.ErrorCode = code
		return resp, nil
	}
	cg := g.cg
	protos := make([]protocol, 0, len(req.Protocols))
	for _, p := range req.Protocols {
		protos = append(protos, protocol{name: p.Name, metadata: slices.Clone(p.Metadata)})
	}
	id := req.MemberID
	if id == "" {
		id = newMemberID(cl.ID, req.InstanceID)
	}
	m := cg.members[id]
	switch {
	case m == nil && len(cg.members) >= g.c.cfg.MaxGroupSize:
		return fail(kerr.GroupMaxSizeReached.Code)
	case !cg.supportsClassic(req.ProtocolType, protos):
		return fail(kerr.InconsistentGroupProtocol.Code)
	case req.MemberID == "" && req.Version >= 4 && req.InstanceID == nil:
		resp.MemberID = id
		return fail(kerr.MemberIDRequired.Code)
	case m != nil && m.classic == nil:
		return fail(kerr.UnknownMemberID.Code)
	}
	sub, ok := decodeSubscription(protos[0].metadata)
	if !ok {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	downgrade := false
	if req.MemberID == "" && req.InstanceID != nil {
		// A static member joining under a new member id replaces the instance's
		// member, whichever protocol it uses and whether or not it left (Kafka's
		// getOrMaybeSubscribeStaticConsumerGroupMember).
		old := cg.members[cg.static[*req.InstanceID]]
		if old != nil && old.epoch != epochStaticLeft {
			old.prevEpoch, old.epoch = old.epoch, epochStaticLeft
		}
		downgrade = old != nil && len(cg.members) <= g.c.cfg.MaxGroupSize && g.canDowngradeWithoutLocked(old)
	}
	// The join is the member's heartbeat: it subscribes, reports what it owns
	// (cooperative members; eager ones own nothing when they join) and reconciles.
	topics := g.c.topicIndex()
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.InstanceID = g.name, id, req.InstanceID
	if sub.Rack != nil && *sub.Rack != "" {
		hb.RackID = sub.Rack
	}
	hb.RebalanceTimeoutMillis = int32(rebalance / time.Millisecond)
	hb.SubscribedTopicNames = append([]string{}, sub.Topics...)
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if m != nil {
		hb.MemberEpoch = m.epoch
		for _, o := range sub.OwnedPartitions {
			if t, ok := topics[o.Topic]; ok {
				hb.Topics = append(hb.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.ID, Partitions: o.Partitions})
			}
		}
	}
	recs, code, _ := g.consumerHeartbeatLocked(cl, hb, hb.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse))
	if code != 0 {
		return fail(code)
	}
	m = cg.members[id]
	if m.classic == nil || m.classic.session != session || !slices.EqualFunc(m.classic.protocols, protos, func(a, b protocol) bool {
		return a.name == b.name && string(a.metadata) == string(b.metadata)
	}) {
		m.classic = &classicMeta{session: session, protocols: protos}
		recs = append(recs, consumerMemberRecord(g.name, m))
	}
	g.touchConsumerLocked(m) // with its classic session timeout
	m.joinSeq, m.joinArmed = m.joinSeq+1, false
	if !downgrade {
		g.armClassicDeadlineLocked(m, &m.syncSeq, rebalance, "did not sync within its rebalance timeout after joining")
	}
	resp.MemberID, resp.Generation = id, m.epoch
	resp.ProtocolType, resp.Protocol = kmsg.StringPtr(classicProtocolType), &protos[0].name
	resp.LeaderID = ""
	if downgrade {
		// It replaced the last consumer-protocol member (Kafka's
		// validateOnlineDowngradeWithReplacedMemberId): the group turns classic,
		// keeping its assignment, and its members join the rebalance.
		recs = append(recs, g.downgradeLocked(nil, "its last consumer-protocol member was replaced by a classic static member")...)
	}
	return resp, recs
}

// classicMemberLocked finds the classic member a request names (Kafka's
// validateConsumerGroupMember and throwIfMemberDoesNotUseClassicProtocol).
func (g *group) classicMemberLocked(memberID string, instanceID *string) (*cmember, int16) {
	var m *cmember
	if instanceID == nil {
		m = g.cg.members[memberID]
	} else if id, ok := g.cg.static[*instanceID]; ok {
		m = g.cg.members[id]
		if m != nil && m.id != memberID {
			return nil, kerr.FencedInstanceID.Code
		}
	}
	if m == nil || m.classic == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	return m, 0
}

// classicSyncLocked serves a classic member's SyncGroup to a consumer group: its
// current assignment, in the embedded consumer protocol.
func (g *group) classicSyncLocked(req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	m, code := g.classicMemberLocked(req.MemberID, req.InstanceID)
	switch {
	case code != 0:
	case req.Generation != m.epoch:
		code = kerr.IllegalGeneration.Code
	case req.ProtocolType != nil && *req.ProtocolType != classicProtocolType,
		req.Protocol != nil && *req.Protocol != m.classic.protocols[0].name:
		code = kerr.InconsistentGroupProtocol.Code
	case g.cg.epoch > m.epoch && m.state != memberUnrevoked:
		code = kerr.RebalanceInProgress.Code
		g.armClassicJoinLocked(m)
	}
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	m.syncSeq++ // synced in time
	g.touchConsumerLocked(m)
	resp.ProtocolType, resp.Protocol = req.ProtocolType, req.Protocol
	resp.MemberAssignment = g.classicAssignmentLocked(m)
	return resp
}

// classicAssignmentLocked is m's current assignment as the embedded consumer
// protocol's assignment, at the version of its subscription.
func (g *group) classicAssignmentLocked(m *cmember) []byte {
	names := make(map[[16]byte]string)
	for n, t := range g.c.topicIndex() {
		names[t.ID] = n
	}
	a := kmsg.NewConsumerMemberAssignment()
	if len(m.classic.protocols[0].metadata) >= 2 {
		md := m.classic.protocols[0].metadata
		a.Version = min(max(int16(md[0])<<8|int16(md[1]), 0), 3)
	}
	byTopic := m.assigned.byTopic()
	for _, id := range sortedIDs(byTopic) {
		if n, ok := names[id]; ok {
			a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: n, Partitions: byTopic[id]})
		}
	}
	slices.SortFunc(a.Topics, func(x, y kmsg.ConsumerMemberAssignmentTopic) int { return strings.Compare(x.Topic, y.Topic) })
	return a.AppendTo(nil)
}

// classicHeartbeatLocked serves a classic member's Heartbeat to a consumer group:
// REBALANCE_IN_PROGRESS tells it to join again, to take a new epoch, to revoke,
// or to take partitions that are now free.
func (g *group) classicHeartbeatLocked(req *kmsg.HeartbeatRequest) int16 {
	m, code := g.classicMemberLocked(req.MemberID, req.InstanceID)
	switch {
	case code != 0:
		return code
	case req.Generation != m.epoch:
		return kerr.IllegalGeneration.Code
	}
	g.touchConsumerLocked(m)
	if m.epoch < g.cg.epoch || m.state == memberUnrevoked || (m.state == memberUnreleased && !g.waitingOnUnreleasedLocked(m)) {
		g.armClassicJoinLocked(m)
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// armClassicJoinLocked gives a classic member told to join again its rebalance
// timeout to do so, unless a deadline already runs (Kafka's
// scheduleConsumerGroupJoinTimeoutIfAbsent); a member that does not join in time
// is fenced.
func (g *group) armClassicJoinLocked(m *cmember) {
	if m.joinArmed {
		return
	}
	m.joinArmed = true
	g.armClassicDeadlineLocked(m, &m.joinSeq, m.rebalanceTimeout, "did not join again within its rebalance timeout")
}

// armClassicDeadlineLocked fences classic member m after d unless *seq moves
// first (the member did what it was waiting for).
func (g *group) armClassicDeadlineLocked(m *cmember, seq *uint64, d time.Duration, why string) {
	if d <= 0 {
		d = m.classic.session
	}
	*seq++
	armed := *seq
	g.c.clock.AfterFunc(d, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.cg == nil || g.cg.members[m.id] != m || *seq != armed || m.classic == nil || g.state == stateDead {
			return
		}
		g.c.logger.Info("group coordinator: classic member of a consumer group "+why, "group", g.name, "member_id", m.id, "timeout", d)
		g.storeConsumerAsyncLocked(g.fenceConsumerMemberLocked(m))
	})
}

// waitingOnUnreleasedLocked reports whether a partition of m's target is still
// owned by another member.
func (g *group) waitingOnUnreleasedLocked(m *cmember) bool {
	for tp := range g.cg.target[m.id] {
		if _, ok := m.assigned[tp]; ok {
			continue
		}
		for _, o := range g.cg.members {
			_, a := o.assigned[tp]
			_, r := o.revoking[tp]
			if o != m && (a || r) {
				return true
			}
		}
	}
	return false
}

// classicLeaveLocked removes a classic member leaving a consumer group; it
// returns the records to append.
func (g *group) classicLeaveLocked(lm kmsg.LeaveGroupRequestMember) (int16, []batch.Record) {
	var m *cmember
	if lm.InstanceID == nil {
		m = g.cg.members[lm.MemberID]
	} else if id, ok := g.cg.static[*lm.InstanceID]; ok {
		m = g.cg.members[id]
		if m != nil && lm.MemberID != "" && lm.MemberID != m.id {
			return kerr.FencedInstanceID.Code, nil
		}
	}
	if m == nil || m.classic == nil {
		return kerr.UnknownMemberID.Code, nil
	}
	return 0, g.removeConsumerMemberLocked(m)
}

// fenceConsumerMemberLocked removes m (it left, timed out or did not revoke in
// time); when m was the last member using the consumer protocol and classic
// members remain, the group turns classic if the policy allows (Kafka's
// validateOnlineDowngradeWithFencedMember). It returns the records to append.
func (g *group) fenceConsumerMemberLocked(m *cmember) []batch.Record {
	if len(g.cg.members) <= 1 || len(g.cg.members)-1 > g.c.cfg.MaxGroupSize || !g.canDowngradeWithoutLocked(m) {
		return g.removeConsumerMemberLocked(m)
	}
	return g.downgradeLocked(m, "its last consumer-protocol member left")
}

// canDowngradeWithoutLocked reports whether m is the group's last member using
// the consumer protocol, the others classic, and the policy allows a downgrade.
func (g *group) canDowngradeWithoutLocked(m *cmember) bool {
	if m.classic != nil || !g.c.downgradeAllowed() {
		return false
	}
	for _, o := range g.cg.members {
		if o != m && o.classic == nil {
			return false
		}
	}
	return true
}

// downgradeLocked turns the consumer group into a classic group of its classic
// members (leaving out the one leaving, if any), each keeping its assignment,
// at generation of the group epoch, and rebalances it.
func (g *group) downgradeLocked(leaving *cmember, why string) []batch.Record {
	cg := g.cg
	recs := make([]batch.Record, 0, 3*len(cg.members)+3)
	ids := make([]string, 0, len(cg.members))
	for id, m := range cg.members {
		recs = append(recs, g.dropConsumerMemberRecordsLocked(m)...)
		stopTimer(m.session)
		m.sessionSeq++
		m.revokeSeq++
		if m != leaving {
			ids = append(ids, id)
		}
	}
	recs = append(recs, g.consumerTombstonesLocked()...)
	slices.Sort(ids)
	g.c.logger.Info("group coordinator: consumer group turns classic: "+why, "group", g.name)
	g.cg = nil
	g.members, g.static = map[string]*member{}, map[string]string{}
	g.protocolType, g.generation, g.leader = classicProtocolType, cg.epoch, ""
	for _, id := range ids {
		cm := cg.members[id]
		g.seq++
		m := &member{id: id, instanceID: cm.instanceID, clientID: cm.clientID, clientHost: cm.clientHost,
			sessionTimeout: cm.classic.session, rebalanceTimeout: cm.rebalanceTimeout, protocolType: classicProtocolType,
			protocols: cm.classic.protocols, joinedSeq: g.seq, syncedGen: g.generation}
		if m.rebalanceTimeout <= 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		m.assignment = g.classicAssignmentLocked(cm)
		g.members[id] = m
		if m.instanceID != nil {
			g.static[*m.instanceID] = id
		}
		if g.leader == "" {
			g.leader = id
		}
	}
	g.protocol = g.selectProtocolLocked()
	g.setStateLocked(stateStable)
	recs = append(recs, groupRecord(g.name, g.metadataValueLocked()))
	for _, m := range g.members {
		g.heartbeatLocked(m)
	}
	g.prepareRebalanceLocked()
	return recs
}

// upgradeLocked turns a classic group with members into a consumer group when
// the policy allows it, the members use the embedded consumer protocol and fit
// in a consumer group (Kafka's validateOnlineUpgrade); it reports whether it did,
// and returns the records of the new group. Held JoinGroup and SyncGroup requests
// are answered REBALANCE_IN_PROGRESS: their members join again, now served by
// the consumer group.
func (g *group) upgradeLocked() (bool, []batch.Record) {
	if !g.c.upgradeAllowed() || g.protocolType != classicProtocolType || len(g.members) > g.c.cfg.MaxGroupSize {
		return false, nil
	}
	topics := g.c.topicIndex()
	cg := newConsumerGroup()
	cg.epoch, cg.targetEpoch = g.generation, g.generation
	for _, om := range g.members {
		meta := om.metadataFor(g.protocol)
		if meta == nil && len(om.protocols) > 0 {
			meta = om.protocols[0].metadata
		}
		sub, ok := decodeSubscription(meta)
		if !ok {
			g.c.logger.Info("group coordinator: cannot upgrade a classic group: a member's embedded consumer protocol is malformed", "group", g.name, "member_id", om.id)
			return false, nil
		}
		assigned := partSet{}
		var a kmsg.ConsumerMemberAssignment
		if len(om.assignment) > 0 && a.ReadFrom(om.assignment) == nil {
			for _, t := range a.Topics {
				if meta, ok := topics[t.Topic]; ok {
					for _, p := range t.Partitions {
						assigned[topicPart{meta.ID, p}] = struct{}{}
					}
				}
			}
		}
		ts := slices.Clone(sub.Topics)
		slices.Sort(ts)
		m := &cmember{id: om.id, instanceID: om.instanceID, clientID: om.clientID, clientHost: om.clientHost,
			topics: slices.Compact(ts), rebalanceTimeout: om.rebalanceTimeout, hasMetadata: true,
			epoch: g.generation, prevEpoch: g.generation, state: memberStable, assigned: assigned, revoking: partSet{},
			classic: &classicMeta{session: om.sessionTimeout, protocols: om.protocols}}
		if sub.Rack != nil && *sub.Rack != "" {
			m.rackID = sub.Rack
		}
		cg.members[m.id] = m
		if m.instanceID != nil {
			cg.static[*m.instanceID] = m.id
		}
		cg.target[m.id] = assigned.clone()
	}
	g.c.logger.Info("group coordinator: classic group turns into a consumer group: a consumer-protocol member joins", "group", g.name)
	for _, om := range g.members {
		g.dropMemberLocked(om, kerr.RebalanceInProgress.Code)
	}
	for id := range g.pending {
		g.removePendingLocked(id)
	}
	g.disarmLocked()
	recs := []batch.Record{groupRecord(g.name, nil), consumerGroupRecord(g.name, cg.epoch, 0)}
	for _, id := range slices.Sorted(maps.Keys(cg.members)) {
		m := cg.members[id]
		recs = append(recs, consumerMemberRecord(g.name, m), consumerTargetRecord(g.name, id, cg.target[id]), consumerCurrentRecord(g.name, m))
	}
	recs = append(recs, consumerTargetMetaRecord(g.name, cg.targetEpoch))
	g.cg = cg
	g.members, g.static = map[string]*member{}, map[string]string{}
	g.protocol, g.leader, g.generation = "", "", 0
	for _, m := range cg.members {
		g.touchConsumerLocked(m)
	}
	g.setConsumerStateLocked()
	return true, recs
}
