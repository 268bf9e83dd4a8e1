package groups

// KIP-848 consumer groups: the coordinator assigns partitions (server-side
// assignors), and members reconcile incrementally, guided by epochs, through one
// API, ConsumerGroupHeartbeat (Kafka's GroupMetadataManager and
// CurrentAssignmentBuilder).
//
// The group epoch counts changes of membership, subscriptions and subscribed topic
// metadata. When it is ahead of the target assignment's epoch, the assignor computes
// a new target assignment for every member. Each member then moves from its current
// assignment to its target on its own heartbeats: it first revokes what its target
// no longer holds (state UNREVOKED_PARTITIONS, its member epoch unchanged), then
// takes the new epoch and the target partitions that no other member still owns
// (UNRELEASED_PARTITIONS while some are owned elsewhere, STABLE once it has all). A
// partition therefore has at most one owner at any time: a member receives it only
// after its previous owner has acknowledged the revocation (or left, or was
// removed).
//
// Every change is appended to the group's __consumer_offsets partition as Kafka's
// records (consumer_records.go) and answered once applied, like a commit.

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
)

// Defaults of the KIP-848 settings (shared with the broker's settings table).
const (
	DefaultConsumerSessionTimeout    = 45 * time.Second // group.consumer.session.timeout.ms
	DefaultConsumerHeartbeatInterval = 5 * time.Second  // group.consumer.heartbeat.interval.ms
)

// DefaultConsumerAssignors is group.consumer.assignors: the server-side assignors
// served, the first being the default.
var DefaultConsumerAssignors = []string{"uniform", "range"}

// Member epochs with a meaning of their own in a heartbeat request.
const (
	epochJoin       = 0
	epochLeave      = -1
	epochStaticLeft = -2
)

// memberState is Kafka's MemberState, stored in the current assignment record.
type memberState int8

const (
	memberUnreleased memberState = 0 // waits for partitions other members still own
	memberUnrevoked  memberState = 1 // must revoke partitions first
	memberStable     memberState = 2
)

// TopicMeta is what the coordinator needs of a topic: its id, for assignments, and
// its partition count.
type TopicMeta struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

type topicPart struct {
	topic     [16]byte
	partition int32
}

// partSet is a set of partitions.
type partSet map[topicPart]struct{}

func (s partSet) byTopic() map[[16]byte][]int32 {
	out := make(map[[16]byte][]int32)
	for tp := range s {
		out[tp.topic] = append(out[tp.topic], tp.partition)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

func (s partSet) equal(o partSet) bool {
	if len(s) != len(o) {
		return false
	}
	for tp := range s {
		if _, ok := o[tp]; !ok {
			return false
		}
	}
	return true
}

func (s partSet) subsetOf(o partSet) bool {
	for tp := range s {
		if _, ok := o[tp]; !ok {
			return false
		}
	}
	return true
}

func (s partSet) clone() partSet {
	out := make(partSet, len(s))
	for tp := range s {
		out[tp] = struct{}{}
	}
	return out
}

// cmember is a member of a consumer group.
type cmember struct {
	id               string
	instanceID       *string
	rackID           *string
	clientID         string
	clientHost       string
	topics           []string // subscribed names, sorted
	regex            *string  // subscribed regular expression (RE2/J full match)
	re               *regexp.Regexp
	mayDescribe      func(topic string) bool // of its last heartbeat's principal; nil: every topic
	regexHash        uint64                  // of the topics its regex matched last; 0: not known
	rightsUnknown    bool                    // loaded from the log, mayDescribe not known until it heartbeats
	classic          *classicMeta            // a member using the classic protocol; nil: the consumer protocol
	serverAssignor   *string
	rebalanceTimeout time.Duration
	hasMetadata      bool // loaded: its member metadata record was found

	epoch     int32 // its member epoch; epochStaticLeft once a static member left
	prevEpoch int32
	state     memberState
	assigned  partSet // owned: its current assignment
	revoking  partSet // owned until it acknowledges their revocation

	session    Timer
	sessionSeq uint64
	revokeSeq  uint64 // the rebalance timeout of a revocation
	// A classic member's deadlines to join again (joinArmed: one is running)
	// and to sync after a join (consumer_classic.go).
	joinSeq, syncSeq uint64
	joinArmed        bool
}

// consumerGroup is the KIP-848 state of a group; group.cg holds it.
type consumerGroup struct {
	epoch       int32 // group epoch
	targetEpoch int32 // epoch of target
	target      map[string]partSet
	members     map[string]*cmember
	static      map[string]string // group.instance.id -> member id
	metaHash    uint64            // subscribed topic metadata the target was computed for
	assignor    string            // the assignor of the last target
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{target: make(map[string]partSet), members: make(map[string]*cmember), static: make(map[string]string)}
}

// ConsumerGroupHeartbeat handles a ConsumerGroupHeartbeat request (v1 semantics:
// the member chooses its own member id). The answer comes once the records of the
// changes it made are applied.
func (c *Coordinator) ConsumerGroupHeartbeat(ctx context.Context, cl Client, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.MemberID, resp.MemberEpoch = &req.MemberID, req.MemberEpoch
	fail := func(code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	if code, msg := c.checkHeartbeat(req); code != 0 {
		return fail(code, msg)
	}
	if c.isShareGroup(req.Group) {
		return fail(kerr.GroupIDNotFound.Code, "Group "+req.Group+" is not a consumer group.")
	}
	g, code := c.lockGroup(req.Group, req.MemberEpoch == epochJoin)
	switch {
	case code != 0:
		return fail(code, "")
	case g == nil:
		return fail(kerr.UnknownMemberID.Code, "the group has no member "+req.MemberID)
	}
	var recs []batch.Record
	if g.cg == nil {
		if len(g.members) > 0 || g.state != stateEmpty {
			var up bool
			if req.MemberEpoch == epochJoin {
				up, recs = g.upgradeLocked()
			}
			if !up {
				g.mu.Unlock()
				return fail(kerr.GroupIDNotFound.Code, "group "+req.Group+" is not a consumer group")
			}
		} else if req.MemberEpoch != epochJoin {
			g.mu.Unlock()
			return fail(kerr.UnknownMemberID.Code, "")
		} else {
			g.becomeConsumerLocked()
		}
	}
	more, code, msg := g.consumerHeartbeatLocked(cl, req, resp)
	recs = append(recs, more...)
	var last int64
	var err error
	if len(recs) > 0 {
		last, err = g.appendLocked(recs)
	}
	sh := g.sh
	g.mu.Unlock()
	if code != 0 {
		return fail(code, msg)
	}
	if len(recs) > 0 {
		if err == nil {
			err = sh.waitApplied(ctx, last)
		}
		if code := waitCode(ctx, err); code != 0 {
			resp.Assignment = nil
			return fail(code, "")
		}
	}
	return resp
}

// checkHeartbeat validates a request as Kafka does before looking at the group.
func (c *Coordinator) checkHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	bad := func(msg string) (int16, string) { return kerr.InvalidRequest.Code, msg }
	switch {
	case req.Group == "":
		return bad("GroupId can't be empty.")
	case req.MemberID == "":
		return bad("MemberId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return bad("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return bad("RackId can't be empty.")
	case req.MemberEpoch < epochStaticLeft:
		return bad("MemberEpoch is invalid.")
	case req.MemberEpoch == epochStaticLeft && req.InstanceID == nil:
		return bad("InstanceId can't be null when leaving as a static member.")
	}
	if req.MemberEpoch == epochJoin {
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return bad("RebalanceTimeoutMs must be provided in first request.")
		case req.Topics == nil || len(req.Topics) > 0:
			return bad("TopicPartitions must be empty when (re-)joining.")
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return bad("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
		}
	}
	if a := req.ServerAssignor; a != nil && !slices.Contains(c.cfg.ConsumerAssignors, *a) {
		return kerr.UnsupportedAssignor.Code, "ServerAssignor " + *a + " is not supported. Supported assignors: " + strings.Join(c.cfg.ConsumerAssignors, ", ")
	}
	if re := req.SubscribedTopicRegex; re != nil && *re != "" {
		if _, err := compileFullMatch(*re); err != nil {
			return kerr.InvalidRegularExpression.Code, "SubscribedTopicRegex is not a valid regular expression: " + err.Error()
		}
	}
	return 0, ""
}

// compileFullMatch compiles a subscription regex as Kafka (RE2/J's matches())
// applies it: to the whole topic name.
func compileFullMatch(re string) (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + re + `)$`)
}

// becomeConsumerLocked turns an empty classic group (or a new one) into a consumer
// group; its committed offsets stay.
func (g *group) becomeConsumerLocked() {
	had := g.protocolType != "" || g.generation > 0 // classic metadata may be stored
	g.cg = newConsumerGroup()
	g.protocolType = "consumer"
	g.protocol, g.leader, g.generation = "", "", 0
	if had {
		g.storeClassicTombstoneLocked()
	}
}

// storeClassicTombstoneLocked deletes the group's classic metadata record.
func (g *group) storeClassicTombstoneLocked() {
	if _, err := g.appendLocked([]batch.Record{groupRecord(g.name, nil)}); err != nil {
		g.c.logger.Warn("group coordinator: deleting classic group metadata failed", "group", g.name, "err", err)
	}
}

// consumerHeartbeatLocked applies one heartbeat to the group, fills resp, and
// returns the records to append (or an error code and message).
func (g *group) consumerHeartbeatLocked(cl Client, req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) ([]batch.Record, int16, string) {
	cg := g.cg
	var recs []batch.Record
	m := cg.members[req.MemberID]
	startEpoch := cg.epoch

	switch req.MemberEpoch {
	case epochLeave, epochStaticLeft:
		if m == nil {
			return nil, kerr.UnknownMemberID.Code, ""
		}
		if req.MemberEpoch == epochStaticLeft && m.instanceID != nil {
			// A static member keeps its assignment for its session timeout, to
			// come back under a new member id (Kafka's static leave).
			m.epoch, m.prevEpoch = epochStaticLeft, m.epoch
			recs = append(recs, consumerCurrentRecord(g.name, m))
		} else {
			recs = append(recs, g.fenceConsumerMemberLocked(m)...)
		}
		resp.MemberEpoch = req.MemberEpoch
		return recs, 0, ""
	case epochJoin:
		var code int16
		var msg string
		m, recs, code, msg = g.joinConsumerLocked(cl, req, m)
		if code != 0 {
			return nil, code, msg
		}
	default:
		if m == nil {
			return nil, kerr.UnknownMemberID.Code, ""
		}
		if req.MemberEpoch != m.epoch {
			owned := ownedOf(req.Topics)
			if req.MemberEpoch != m.prevEpoch || owned == nil || !owned.subsetOf(m.assigned) {
				return nil, kerr.FencedMemberEpoch.Code, "the member epoch is fenced by the group coordinator"
			}
		}
	}
	g.touchConsumerLocked(m)

	changedMeta, changedSub := m.update(req, cl)
	if changedMeta {
		recs = append(recs, consumerMemberRecord(g.name, m))
	}
	if changedSub {
		cg.epoch++
	}
	recs = append(recs, g.maybeNewTargetLocked(startEpoch)...)

	before, beforeEpoch, beforeState := m.assigned.clone(), m.epoch, m.state
	owned := ownedOf(req.Topics)
	g.reconcileLocked(m, owned)
	changed := !before.equal(m.assigned) || beforeEpoch != m.epoch || beforeState != m.state
	if changed || req.MemberEpoch == epochJoin {
		recs = append(recs, consumerCurrentRecord(g.name, m))
	}
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(g.c.consumerHeartbeatInterval(g.name) / time.Millisecond)
	if changed || req.MemberEpoch == epochJoin || (owned != nil && !owned.equal(m.assigned)) {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		byTopic := m.assigned.byTopic()
		a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		for _, id := range sortedIDs(byTopic) {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID, t.Partitions = id, byTopic[id]
			a.Topics = append(a.Topics, t)
		}
		resp.Assignment = &a
	}
	g.setConsumerStateLocked()
	return recs, 0, ""
}

// joinConsumerLocked admits the member of a heartbeat with epoch 0: a new member,
// an existing one that lost a response (admitted again in place, its assignment
// sent again), or a static member coming back under a new member id.
func (g *group) joinConsumerLocked(cl Client, req *kmsg.ConsumerGroupHeartbeatRequest, m *cmember) (*cmember, []batch.Record, int16, string) {
	cg := g.cg
	var recs []batch.Record
	if req.InstanceID != nil {
		if oldID, ok := cg.static[*req.InstanceID]; ok && oldID != req.MemberID {
			old := cg.members[oldID]
			if old != nil && old.epoch != epochStaticLeft && old.classic == nil {
				// Two consumer-protocol members: the old one must have left first.
				// A classic one is replaced as it is (Kafka's rule).
				return nil, nil, kerr.UnreleasedInstanceID.Code, "static member " + *req.InstanceID + " is still in use by another member"
			}
			if old != nil && m == nil {
				// Replace it: the new member id takes over its assignment and epoch.
				recs = append(recs, g.dropConsumerMemberRecordsLocked(old)...)
				delete(cg.members, old.id)
				stopTimer(old.session)
				old.sessionSeq++
				epoch := old.epoch
				if epoch == epochStaticLeft {
					epoch = old.prevEpoch
				}
				// Its subscription too: the same one moves nothing (Kafka copies the member).
				m = &cmember{id: req.MemberID, instanceID: old.instanceID, epoch: epoch, prevEpoch: epoch,
					state: old.state, assigned: old.assigned, revoking: old.revoking,
					rackID: old.rackID, topics: old.topics, regex: old.regex, re: old.re, serverAssignor: old.serverAssignor,
					rebalanceTimeout: old.rebalanceTimeout, hasMetadata: old.hasMetadata}
				if t, ok := cg.target[old.id]; ok {
					cg.target[m.id] = t
					delete(cg.target, old.id)
					recs = append(recs, consumerTargetRecord(g.name, m.id, t))
				}
				cg.members[m.id] = m
				cg.static[*req.InstanceID] = m.id
				recs = append(recs, consumerMemberRecord(g.name, m))
				return m, recs, 0, ""
			}
		}
	}
	if m != nil {
		return m, nil, 0, ""
	}
	if len(cg.members) >= g.c.cfg.MaxGroupSize {
		return nil, nil, kerr.GroupMaxSizeReached.Code, "the consumer group has reached its maximum size"
	}
	m = &cmember{id: req.MemberID, instanceID: req.InstanceID, assigned: partSet{}, revoking: partSet{}, state: memberStable}
	cg.members[m.id] = m
	if m.instanceID != nil {
		cg.static[*m.instanceID] = m.id
	}
	return m, recs, 0, "" // its subscription moves the group epoch
}

// update takes the fields a heartbeat sets; it reports whether the member's stored
// metadata changed, and whether its subscription did.
func (m *cmember) update(req *kmsg.ConsumerGroupHeartbeatRequest, cl Client) (meta, sub bool) {
	if !m.hasMetadata {
		meta, sub, m.hasMetadata = true, true, true
	}
	m.mayDescribe, m.rightsUnknown = cl.MayDescribe, false
	if m.clientID != cl.ID || m.clientHost != cl.Host {
		m.clientID, m.clientHost, meta = cl.ID, cl.Host, true
	}
	if req.RackID != nil && (m.rackID == nil || *m.rackID != *req.RackID) {
		m.rackID, meta, sub = req.RackID, true, true
	}
	if req.RebalanceTimeoutMillis >= 0 {
		if d := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond; d != m.rebalanceTimeout {
			m.rebalanceTimeout, meta = d, true
		}
	}
	if req.SubscribedTopicNames != nil {
		ts := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(ts)
		ts = slices.Compact(ts)
		if !slices.Equal(ts, m.topics) {
			m.topics, meta, sub = ts, true, true
		}
	}
	if req.SubscribedTopicRegex != nil {
		var re *string
		if *req.SubscribedTopicRegex != "" {
			re = req.SubscribedTopicRegex
		}
		if (re == nil) != (m.regex == nil) || (re != nil && *re != *m.regex) {
			m.regex, m.re, meta, sub = re, nil, true, true
		}
	}
	if req.ServerAssignor != nil && (m.serverAssignor == nil || *m.serverAssignor != *req.ServerAssignor) {
		m.serverAssignor, meta, sub = req.ServerAssignor, true, true
	}
	if m.regex != nil && m.re == nil {
		m.re, _ = compileFullMatch(*m.regex) // validated by checkHeartbeat or when it was stored
	}
	return meta, sub
}

// ownedOf is the partitions a request says the member owns; nil when it does not
// say (a heartbeat that only keeps the session).
func ownedOf(ts []kmsg.ConsumerGroupHeartbeatRequestTopic) partSet {
	if ts == nil {
		return nil
	}
	out := partSet{}
	for _, t := range ts {
		for _, p := range t.Partitions {
			out[topicPart{t.TopicID, p}] = struct{}{}
		}
	}
	return out
}

// touchConsumerLocked restarts m's session: silent for the session timeout, it
// is removed and its partitions go to others.
func (g *group) touchConsumerLocked(m *cmember) {
	stopTimer(m.session)
	m.sessionSeq++
	seq := m.sessionSeq
	d := g.c.consumerSessionTimeout(g.name)
	if m.classic != nil {
		d = m.classic.session
	}
	m.session = g.c.clock.AfterFunc(d, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.cg == nil || g.cg.members[m.id] != m || m.sessionSeq != seq || g.state == stateDead {
			return
		}
		g.c.logger.Info("group coordinator: consumer group member session timed out", "group", g.name, "member_id", m.id, "session_timeout", d)
		g.storeConsumerAsyncLocked(g.fenceConsumerMemberLocked(m))
	})
}

// armRevocationLocked removes m if it has not revoked its partitions within its
// rebalance timeout (Kafka fences it).
func (g *group) armRevocationLocked(m *cmember) {
	m.revokeSeq++
	seq := m.revokeSeq
	d := m.rebalanceTimeout
	if d <= 0 {
		d = g.c.consumerSessionTimeout(g.name)
	}
	g.c.clock.AfterFunc(d, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.cg == nil || g.cg.members[m.id] != m || m.revokeSeq != seq || m.state != memberUnrevoked || g.state == stateDead {
			return
		}
		g.c.logger.Info("group coordinator: consumer group member did not revoke within its rebalance timeout", "group", g.name, "member_id", m.id)
		g.storeConsumerAsyncLocked(g.fenceConsumerMemberLocked(m))
	})
}

// storeConsumerAsyncLocked appends records of a change already in effect.
func (g *group) storeConsumerAsyncLocked(recs []batch.Record) {
	if len(recs) == 0 {
		return
	}
	if _, err := g.appendLocked(recs); err != nil {
		g.c.logger.Warn("group coordinator: storing consumer group records failed", "group", g.name, "err", err)
	}
}

// removeConsumerMemberLocked removes m (it left, timed out or was fenced); its
// partitions are free at once. It returns the records to append.
func (g *group) removeConsumerMemberLocked(m *cmember) []batch.Record {
	cg := g.cg
	stopTimer(m.session)
	m.sessionSeq++
	m.revokeSeq++
	recs := g.dropConsumerMemberRecordsLocked(m)
	delete(cg.members, m.id)
	delete(cg.target, m.id)
	if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
		delete(cg.static, *m.instanceID)
	}
	cg.epoch++
	recs = append(recs, consumerGroupRecord(g.name, cg.epoch, cg.metaHash))
	g.setConsumerStateLocked()
	return recs
}

// dropConsumerMemberRecordsLocked returns the tombstones of m's records.
func (g *group) dropConsumerMemberRecordsLocked(m *cmember) []batch.Record {
	return []batch.Record{
		consumerTombstone(recConsumerCurrent, g.name, &m.id),
		consumerTombstone(recConsumerTarget, g.name, &m.id),
		consumerTombstone(recConsumerMember, g.name, &m.id),
	}
}

// setConsumerStateLocked keeps the classic state field meaningful for the code
// shared by both kinds (expiry, deletion): Empty without members, else Stable.
func (g *group) setConsumerStateLocked() {
	want := stateStable
	if len(g.cg.members) == 0 {
		want = stateEmpty
	}
	if g.state != want {
		g.setStateLocked(want)
	}
}

// stateName is the group state KIP-848 reports: Empty, Assigning (the
// target is behind the group epoch), Reconciling (a member is not at the target),
// or Stable.
func (cg *consumerGroup) stateName() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.targetEpoch < cg.epoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.targetEpoch || m.state != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// consumerTombstonesLocked deletes an empty consumer group's records.
func (g *group) consumerTombstonesLocked() []batch.Record {
	return []batch.Record{consumerTombstone(recConsumerTargetMeta, g.name, nil), consumerTombstone(recConsumerGroup, g.name, nil)}
}

// restoreConsumer makes g the consumer group cg loaded from the log. Members must
// heartbeat within their session timeout from now (the shard's load starts it).
func (g *group) restoreConsumer(cg *consumerGroup) {
	g.members, g.static = map[string]*member{}, map[string]string{}
	g.protocolType, g.protocol, g.leader, g.generation = "consumer", "", "", 0
	g.cg = cg
	for _, m := range cg.members {
		if m.instanceID != nil {
			cg.static[*m.instanceID] = m.id
		}
		if m.regex != nil {
			m.re, _ = compileFullMatch(*m.regex)
			m.rightsUnknown = true
		}
	}
	g.state = stateEmpty
	if len(cg.members) > 0 {
		g.state = stateStable
	}
}

// becomeClassicLocked turns an empty consumer group into a classic one (a classic
// member joins it); its committed offsets stay.
func (g *group) becomeClassicLocked() {
	g.storeConsumerAsyncLocked(g.consumerTombstonesLocked())
	g.cg = nil
	g.protocolType = ""
}

// consumerCommitCodeLocked checks a commit of parts to a consumer group, whose
// generation field carries the member epoch (Kafka's ConsumerGroup
// validateOffsetCommit): a client outside the group (epoch -1) commits only while
// the group is empty; a member commits with OffsetCommit v9+ (UNSUPPORTED_VERSION
// before; a transactional commit at any version) and its current epoch, or an older
// one for partitions it still owns (they cannot have moved meanwhile; Kafka 4.3's
// KIP-1251 relaxes the check the same way). Another epoch is STALE_MEMBER_EPOCH,
// ILLEGAL_GENERATION for a transactional commit.
func (g *group) consumerCommitCodeLocked(memberID string, epoch int32, parts []commitPartition, version int16, txn bool) int16 {
	cg := g.cg
	if epoch < 0 && len(cg.members) == 0 {
		return 0
	}
	m := cg.members[memberID]
	stale := kerr.StaleMemberEpoch.Code
	if txn || (m != nil && m.classic != nil) {
		stale = kerr.IllegalGeneration.Code // a classic member's generation, as Kafka answers it
	}
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case !txn && version < 9 && m.classic == nil:
		return kerr.UnsupportedVersion.Code
	case epoch == m.epoch:
		return 0
	case epoch > m.epoch || epoch < 0:
		return stale
	}
	topics := g.c.topicIndex()
	for _, p := range parts {
		meta, ok := topics[p.topic]
		tp := topicPart{meta.ID, p.partition}
		_, assigned := m.assigned[tp]
		_, revoking := m.revoking[tp]
		if !ok || !(assigned || revoking) {
			return stale
		}
	}
	return 0
}

// consumerFetchCodeLocked checks the member of an OffsetFetch v9+ to a consumer
// group (Kafka's validateOffsetFetch): none (null member id, epoch -1), or a
// member at its current epoch.
func (g *group) consumerFetchCodeLocked(memberID *string, epoch int32) int16 {
	if memberID == nil && epoch < 0 {
		return 0
	}
	var m *cmember
	if memberID != nil {
		m = g.cg.members[*memberID]
	}
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}
