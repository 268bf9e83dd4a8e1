package groups

// The group state machine (Kafka's classic protocol, GroupCoordinator.scala):
//
//	Empty ──join──> PreparingRebalance ──all joined / rebalance timeout──> CompletingRebalance
//	  ^                 ^   |                                                 |
//	  |   no member left |   +──> Empty (generation+1)     leader's SyncGroup stored
//	  |                  |                                                   v
//	  +──────────────────+── member joins, leaves, changes or dies ────── Stable
//
// Dead is a group removed from the coordinator (deleted, expired, unloaded).

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
)

type groupState int8

const (
	stateEmpty groupState = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

// String is the state's name as DescribeGroups reports it.
func (s groupState) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	default:
		return "Dead"
	}
}

type protocol struct {
	name     string
	metadata []byte
}

// member is one member of a group's current or coming generation.
type member struct {
	id         string
	instanceID *string // group.instance.id of a static member
	clientID   string
	clientHost string

	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocolType     string
	protocols        []protocol

	assignment []byte
	joinedSeq  uint64 // order of joining: the first member is the leader

	join       chan *kmsg.JoinGroupResponse // a held JoinGroup, or nil
	joinVer    int16                        // its version
	sync       chan *kmsg.SyncGroupResponse // a held SyncGroup, or nil
	syncedGen  int32                        // the generation it last sent SyncGroup for
	session    Timer
	sessionSeq uint64
}

func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

func (m *member) sameProtocols(ps []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a protocol, b kmsg.JoinGroupRequestProtocol) bool {
		return a.name == b.Name && string(a.metadata) == string(b.Metadata)
	})
}

type group struct {
	c    *Coordinator
	sh   *shard
	name string

	// Guarded by mu (a group is handled by one goroutine at a time, like Kafka's
	// group lock).
	mu           sync.Mutex
	state        groupState
	protocolType string
	protocol     string
	generation   int32
	leader       string
	members      map[string]*member
	pending      map[string]Timer  // member ids handed out with MEMBER_ID_REQUIRED
	static       map[string]string // group.instance.id -> member id
	stateSince   time.Time         // when the group entered its state
	seq          uint64            // join order counter

	rebalance    Timer // rebalance timeout, initial delay, or sync timeout
	rebalanceSeq uint64
	initialDelay bool          // in the initial rebalance delay of a new generation
	newMembers   bool          // a member joined during the initial delay
	delayLeft    time.Duration // what is left of the rebalance timeout after the delays

	// cg is the state of a KIP-848 consumer group; nil for a classic group. A
	// group is one or the other: an empty group changes kind when a member of the
	// other protocol joins.
	cg *consumerGroup

	hasOffsets bool  // some offset may be committed (Pebble has the truth)
	lastAppend int64 // offset of the group's last appended record, -1: none
}

func newGroup(c *Coordinator, sh *shard, name string) *group {
	return &group{
		c: c, sh: sh, name: name,
		members:    make(map[string]*member),
		pending:    make(map[string]Timer),
		static:     make(map[string]string),
		stateSince: c.clock.Now(),
		lastAppend: -1,
	}
}

// appendLocked appends records of this group to its shard's log and returns the
// offset of the last one.
func (g *group) appendLocked(recs []batch.Record) (int64, error) {
	last, err := g.sh.append(g.c.clock.Now(), recs)
	if err == nil {
		g.lastAppend = last
	}
	return last, err
}

func newMemberID(clientID string, instanceID *string) string {
	prefix := clientID
	if instanceID != nil {
		prefix = *instanceID
	}
	return prefix + "-" + uuid.NewString()
}

// restore sets the group from its stored metadata: the generation, protocol and
// members as of the last rebalance that completed, Stable if it has members.
func (g *group) restore(v *kmsg.GroupMetadataValue, now time.Time) {
	g.protocolType = v.ProtocolType
	g.generation = v.Generation
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	g.stateSince = now
	if v.CurrentStateTimestamp > 0 {
		g.stateSince = time.UnixMilli(v.CurrentStateTimestamp)
	}
	for _, vm := range v.Members {
		g.seq++
		m := &member{
			id: vm.MemberID, instanceID: vm.InstanceID, clientID: vm.ClientID, clientHost: vm.ClientHost,
			sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
			protocolType:     v.ProtocolType,
			protocols:        []protocol{{name: g.protocol, metadata: vm.Subscription}},
			assignment:       vm.Assignment,
			joinedSeq:        g.seq,
			syncedGen:        v.Generation,
		}
		if m.rebalanceTimeout <= 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		g.members[m.id] = m
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
	}
	if len(g.members) > 0 {
		g.state = stateStable
		if g.members[g.leader] == nil {
			g.leader = g.firstMemberLocked()
		}
	}
}

// metadataValueLocked is the group's current state as a group metadata record value.
func (g *group) metadataValueLocked() []byte {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocol != "" || len(g.members) > 0 {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = g.stateSince.UnixMilli()
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(g.members[a].joinedSeq, g.members[b].joinedSeq) })
	for _, id := range ids {
		m := g.members[id]
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID, vm.ClientID, vm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout.Milliseconds())
		vm.SessionTimeoutMillis = int32(m.sessionTimeout.Milliseconds())
		vm.Subscription = m.metadataFor(g.protocol)
		vm.Assignment = m.assignment
		if vm.Subscription == nil {
			vm.Subscription = []byte{}
		}
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		v.Members = append(v.Members, vm)
	}
	return v.AppendTo(nil)
}

// storeLocked appends the group's metadata to the log and returns the record's
// offset; the caller may wait for it to be applied.
func (g *group) storeLocked() (int64, error) {
	return g.appendLocked([]batch.Record{groupRecord(g.name, g.metadataValueLocked())})
}

// storeAsyncLocked stores the group's metadata without waiting for it: the state it
// records (an empty group, a replaced static member) is already in effect.
func (g *group) storeAsyncLocked() {
	if _, err := g.storeLocked(); err != nil {
		g.c.logger.Warn("group coordinator: storing group metadata failed", "group", g.name, "err", err)
	}
}

func (g *group) setStateLocked(s groupState) {
	g.state = s
	g.stateSince = g.c.clock.Now()
}

// firstMemberLocked returns the member that joined first, or "".
func (g *group) firstMemberLocked() string {
	var first *member
	for _, m := range g.members {
		if first == nil || m.joinedSeq < first.joinedSeq {
			first = m
		}
	}
	if first == nil {
		return ""
	}
	return first.id
}

// heartbeatLocked restarts m's session timer. A member whose session times out is
// removed, unless it waits in JoinGroup or SyncGroup (the rebalance and sync
// timeouts bound those waits).
func (g *group) heartbeatLocked(m *member) {
	stopTimer(m.session)
	m.sessionSeq++
	seq := m.sessionSeq
	m.session = g.c.clock.AfterFunc(m.sessionTimeout, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.members[m.id] != m || m.sessionSeq != seq || g.state == stateDead {
			return
		}
		if m.join != nil || m.sync != nil {
			g.heartbeatLocked(m)
			return
		}
		g.c.logger.Info("group coordinator: member session timed out", "group", g.name, "member_id", m.id,
			"session_timeout", m.sessionTimeout)
		g.removeMemberLocked(m, kerr.UnknownMemberID.Code)
	})
}

// addPendingLocked remembers a member id handed out with MEMBER_ID_REQUIRED until
// the member joins with it or its session timeout passes.
func (g *group) addPendingLocked(id string, session time.Duration) {
	g.pending[id] = g.c.clock.AfterFunc(session, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if _, ok := g.pending[id]; !ok || g.state == stateDead {
			return
		}
		delete(g.pending, id)
		if g.state == statePreparingRebalance {
			g.tryCompleteJoinLocked()
		}
	})
}

func (g *group) removePendingLocked(id string) bool {
	t, ok := g.pending[id]
	if ok {
		stopTimer(t)
		delete(g.pending, id)
	}
	return ok
}

// removeMemberLocked removes m (it left or its session timed out): a held join or
// sync is answered with code, and the group rebalances.
func (g *group) removeMemberLocked(m *member, code int16) {
	g.dropMemberLocked(m, code)
	switch g.state {
	case stateStable, stateCompletingRebalance:
		g.prepareRebalanceLocked()
	case statePreparingRebalance:
		g.tryCompleteJoinLocked()
	}
}

// dropMemberLocked deletes m from the group without a state change.
func (g *group) dropMemberLocked(m *member, code int16) {
	stopTimer(m.session)
	m.sessionSeq++
	delete(g.members, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	if m.join != nil {
		r := kmsg.NewPtrJoinGroupResponse()
		r.SetVersion(m.joinVer)
		r.ErrorCode, r.Generation, r.MemberID = code, -1, m.id
		r.Protocol = kmsg.StringPtr("")
		m.join <- r
		m.join = nil
	}
	if m.sync != nil {
		m.sync <- &kmsg.SyncGroupResponse{ErrorCode: code}
		m.sync = nil
	}
	if g.leader == m.id {
		g.leader = g.firstMemberLocked()
	}
}

// maxRebalanceTimeoutLocked is the longest rebalance timeout of the members.
func (g *group) maxRebalanceTimeoutLocked() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// armLocked (re)starts the group's rebalance timer: fn runs after d unless the timer
// is re-armed or stopped first.
func (g *group) armLocked(d time.Duration, fn func()) {
	stopTimer(g.rebalance)
	g.rebalanceSeq++
	seq := g.rebalanceSeq
	g.rebalance = g.c.clock.AfterFunc(d, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.rebalanceSeq != seq || g.state == stateDead {
			return
		}
		fn()
	})
}

func (g *group) disarmLocked() {
	stopTimer(g.rebalance)
	g.rebalance = nil
	g.rebalanceSeq++
}

// prepareRebalanceLocked starts a new rebalance: members must (re)join within the
// rebalance timeout. Held SyncGroups of the abandoned generation get
// REBALANCE_IN_PROGRESS.
func (g *group) prepareRebalanceLocked() {
	if g.state == stateCompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			if m.sync != nil {
				m.sync <- &kmsg.SyncGroupResponse{ErrorCode: kerr.RebalanceInProgress.Code}
				m.sync = nil
			}
		}
	}
	fromEmpty := g.state == stateEmpty
	g.setStateLocked(statePreparingRebalance)
	timeout := g.maxRebalanceTimeoutLocked()
	if delay := g.c.cfg.InitialRebalanceDelay; fromEmpty && delay > 0 {
		// Kafka's InitialDelayedJoin: wait for more members of a new group.
		g.initialDelay, g.newMembers = true, false
		d := min(delay, timeout)
		g.delayLeft = timeout - d
		g.armLocked(d, g.initialDelayEndedLocked)
		return
	}
	g.initialDelay = false
	g.armLocked(timeout, g.completeJoinLocked)
	g.tryCompleteJoinLocked()
}

func (g *group) initialDelayEndedLocked() {
	if g.state != statePreparingRebalance {
		return
	}
	if g.newMembers && g.delayLeft > 0 {
		g.newMembers = false
		d := min(g.c.cfg.InitialRebalanceDelay, g.delayLeft)
		g.delayLeft -= d
		g.armLocked(d, g.initialDelayEndedLocked)
		return
	}
	g.initialDelay = false
	g.completeJoinLocked()
}

// tryCompleteJoinLocked completes the join phase once every member waits in
// JoinGroup and no member id handed out is still to join.
func (g *group) tryCompleteJoinLocked() {
	if g.state != statePreparingRebalance || g.initialDelay || len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.join == nil {
			return
		}
	}
	g.completeJoinLocked()
}

// completeJoinLocked ends the join phase: dynamic members that did not rejoin are
// removed, the generation moves on, the protocol is chosen, and every held JoinGroup
// is answered (the leader gets the members and their metadata).
func (g *group) completeJoinLocked() {
	if g.state != statePreparingRebalance {
		return
	}
	g.disarmLocked()
	g.initialDelay = false
	for _, m := range g.members {
		if m.join == nil && m.instanceID == nil {
			g.c.logger.Info("group coordinator: member did not rejoin in time", "group", g.name, "member_id", m.id)
			g.dropMemberLocked(m, kerr.UnknownMemberID.Code)
		}
	}
	g.generation++
	if len(g.members) == 0 {
		g.protocol, g.leader = "", ""
		g.setStateLocked(stateEmpty)
		g.storeAsyncLocked()
		return
	}
	if g.members[g.leader] == nil {
		g.leader = g.firstMemberLocked()
	}
	g.protocol = g.selectProtocolLocked()
	g.setStateLocked(stateCompletingRebalance)
	for _, m := range g.members {
		if m.join == nil {
			continue
		}
		r := g.joinResponseLocked(m, m.joinVer)
		m.join <- r
		m.join = nil
		g.heartbeatLocked(m)
	}
	// Members must send SyncGroup within the rebalance timeout; those that do not
	// are removed and the group rebalances again.
	gen := g.generation
	g.armLocked(g.maxRebalanceTimeoutLocked(), func() {
		if g.state != stateCompletingRebalance || g.generation != gen {
			return
		}
		for _, m := range g.members {
			if m.syncedGen != gen {
				g.c.logger.Info("group coordinator: member did not sync in time", "group", g.name, "member_id", m.id)
				g.dropMemberLocked(m, kerr.RebalanceInProgress.Code)
			}
		}
		g.prepareRebalanceLocked()
	})
}

// joinResponseLocked is the JoinGroup answer for m in the current generation.
func (g *group) joinResponseLocked(m *member, version int16) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.SetVersion(version)
	r.Generation = g.generation
	p, pt := g.protocol, g.protocolType
	r.Protocol, r.ProtocolType = &p, &pt
	r.LeaderID = g.leader
	r.MemberID = m.id
	if m.id == g.leader {
		ids := make([]*member, 0, len(g.members))
		for _, o := range g.members {
			ids = append(ids, o)
		}
		slices.SortFunc(ids, func(a, b *member) int { return cmp.Compare(a.joinedSeq, b.joinedSeq) })
		for _, o := range ids {
			meta := o.metadataFor(g.protocol)
			if meta == nil {
				meta = []byte{}
			}
			r.Members = append(r.Members, kmsg.JoinGroupResponseMember{MemberID: o.id, InstanceID: o.instanceID, ProtocolMetadata: meta})
		}
	}
	return r
}

// selectProtocolLocked chooses the protocol every member supports that most
// members prefer (each votes for its first supported choice); ties go to the
// leader's order of preference.
func (g *group) selectProtocolLocked() string {
	var leader *member
	if g.leader != "" {
		leader = g.members[g.leader]
	}
	if leader == nil {
		return ""
	}
	common := func(name string) bool {
		for _, m := range g.members {
			if !slices.ContainsFunc(m.protocols, func(p protocol) bool { return p.name == name }) {
				return false
			}
		}
		return true
	}
	votes := make(map[string]int)
	for _, m := range g.members {
		for _, p := range m.protocols {
			if common(p.name) {
				votes[p.name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	for _, p := range leader.protocols {
		if v, ok := votes[p.name]; ok && v > bestVotes {
			best, bestVotes = p.name, v
		}
	}
	if best == "" {
		// Unreachable: joins are refused unless a protocol is common.
		for name := range votes {
			best = name
		}
	}
	return best
}

// supportsLocked reports whether a member with protocol type pt and protocols ps
// may be in the group: the type matches and some protocol is supported by every
// other member. A group without members accepts any non-empty set.
func (g *group) supportsLocked(pt string, ps []kmsg.JoinGroupRequestProtocol, self string) bool {
	if pt == "" || len(ps) == 0 {
		return false
	}
	others := 0
	for id := range g.members {
		if id != self {
			others++
		}
	}
	if others == 0 {
		return true
	}
	if g.protocolType != pt {
		return false
	}
	for _, p := range ps {
		ok := true
		for id, m := range g.members {
			if id != self && !slices.ContainsFunc(m.protocols, func(mp protocol) bool { return mp.name == p.Name }) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// unloadLocked ends the group in this coordinator: held requests are answered with
// code, timers are stopped, and the group is Dead.
func (g *group) unloadLocked(code int16) {
	g.disarmLocked()
	for _, t := range g.pending {
		stopTimer(t)
	}
	g.pending = map[string]Timer{}
	for _, m := range g.members {
		g.dropMemberLocked(m, code)
	}
	if g.cg != nil {
		for _, m := range g.cg.members {
			stopTimer(m.session)
			m.sessionSeq++
			m.revokeSeq++
		}
	}
	g.state = stateDead
}
