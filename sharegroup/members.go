package sharegroup

// Share group membership at the group coordinator: ShareGroupHeartbeat and
// ShareGroupDescribe. Every member is assigned every partition of the topics it
// subscribes to (the share-partitions divide the records, not the partitions).
//
// Membership is kept in the group's partition of __consumer_offsets (records.go),
// through MemberLog: a heartbeat that changes the group is answered once its
// records are committed, and the node that coordinates the partition next loads
// the groups from them (LoadShareGroups), so members keep their ids, epochs and
// assignments across a failover.
//
// Lock order: a group's mu, then Coordinator.mu. MemberLog is called with a
// group's mu held (Delete also waits for its write with it held: the group is
// empty, and a member joining it waits); LoadShareGroups and DropShareGroups take
// only Coordinator.mu.

import (
	"context"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
)

// TopicInfo is what the coordinator knows of a topic.
type TopicInfo struct {
	ID         [16]byte
	Partitions int32
}

// MemberLog keeps share group membership: the group coordinator (package groups),
// which appends to a group's partition of __consumer_offsets.
type MemberLog interface {
	// ShareShard returns the partition of group when this node coordinates it and
	// has loaded it, else the code to answer.
	ShareShard(group string) (int32, int16)
	// AppendShareRecords appends records of group (called with the group's lock
	// held); wait, called without it, returns once they are committed, or the
	// code to answer.
	AppendShareRecords(group string, recs []batch.Record) (wait func(context.Context) int16)
}

// groupNamed is a MemberLog that also tells whether an id is a classic or
// consumer group (groups.Coordinator.IsGroup): Kafka keeps one group per id.
type groupNamed interface{ IsGroup(name string) bool }

// isOtherGroup reports whether name is a classic or consumer group here.
func (c *Coordinator) isOtherGroup(name string) bool {
	o, ok := c.cfg.MemberLog.(groupNamed)
	return ok && o.IsGroup(name)
}

// flushTimeout bounds the wait for records written outside a request.
const flushTimeout = 10 * time.Second

type member struct {
	id, clientID, host, rack string
	epoch, prevEpoch         int32
	subscribed               []string
	assigned                 map[[16]byte][]int32
	lastSeen                 time.Time
}

type shareGroup struct {
	mu        sync.Mutex
	name      string
	partition int32 // of __consumer_offsets; -1 without a MemberLog
	// dead: the group was dropped (its coordination moved) or deleted; a request
	// that locked it looks the group up again.
	dead    atomic.Bool
	epoch   int32
	members map[string]*member
	// stored: the group is in its partition's records (loaded from them, or
	// written by Ensure); a group with epoch 0 and not stored is in memory only.
	stored bool
	// ensuring: Ensure is writing the group's epoch record.
	ensuring bool
}

func newShareGroup(name string) *shareGroup {
	return &shareGroup{name: name, partition: -1, members: make(map[string]*member)}
}

// Coordinator is the membership side of share groups on this node.
type Coordinator struct {
	cfg Config
	// Topic looks a topic up by name.
	topic func(name string) (TopicInfo, bool)
	// onLeave is told when a member leaves or times out.
	onLeave func(group, member string)

	mu struct {
		sync.Mutex
		groups map[string]*shareGroup
	}
}

// NewCoordinator returns a coordinator with no group.
func NewCoordinator(cfg Config, topic func(string) (TopicInfo, bool), onLeave func(group, member string)) *Coordinator {
	cfg.setDefaults()
	c := &Coordinator{cfg: cfg, topic: topic, onLeave: onLeave}
	c.mu.groups = make(map[string]*shareGroup)
	return c
}

// LoadShareGroups replaces the share groups of __consumer_offsets partition id
// with those its records hold (groups.ShareGroups): their members get a whole
// session timeout from now to heartbeat. Unreadable records are logged and
// skipped.
func (c *Coordinator) LoadShareGroups(id int32, records []batch.Record) {
	l := newLoader()
	for _, r := range records {
		if err := l.add(r.Key, r.Value); err != nil {
			c.cfg.Logger.Warn("share group coordinator: skipping an unreadable record", "partition", id, "err", err)
		}
	}
	now := c.cfg.Clock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(id)
	for name, g := range l.finish() {
		g.partition, g.stored = id, true
		for _, m := range g.members {
			m.lastSeen = now
		}
		c.mu.groups[name] = g
	}
}

// DropShareGroups forgets the share groups of partition id, which this node no
// longer coordinates (groups.ShareGroups).
func (c *Coordinator) DropShareGroups(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(id)
}

func (c *Coordinator) dropLocked(id int32) {
	for name, g := range c.mu.groups {
		if g.partition == id {
			g.dead.Store(true)
			delete(c.mu.groups, name)
		}
	}
}

// lockGroup returns group name locked, creating it if create is set (nil when
// it does not exist and create is not set).
func (c *Coordinator) lockGroup(name string, create bool, partition int32) *shareGroup {
	for {
		c.mu.Lock()
		g := c.mu.groups[name]
		if g == nil {
			if !create {
				c.mu.Unlock()
				return nil
			}
			g = newShareGroup(name)
			g.partition = partition
			c.mu.groups[name] = g
		}
		c.mu.Unlock()
		g.mu.Lock()
		if !g.dead.Load() {
			return g
		}
		g.mu.Unlock()
	}
}

// appendLocked writes a group's records and returns the wait for them; nil when
// there is nothing to write or no MemberLog.
func (c *Coordinator) appendLocked(g *shareGroup, recs []batch.Record) func(context.Context) int16 {
	if len(recs) == 0 || c.cfg.MemberLog == nil {
		return nil
	}
	return c.cfg.MemberLog.AppendShareRecords(g.name, recs)
}

// Retries of a removal of timed-out members whose write failed, as Kafka's
// coordinator retries a session timeout's write.
const (
	removalWriteAttempts = 5
	removalRetryBackoff  = 500 * time.Millisecond
)

// waitBackground waits for the removal of members whose session timed out
// (removed), written outside a request. Should the write fail, the removal is
// written again, up to removalWriteAttempts times in all, unless the group is no
// longer coordinated here (the next coordinator times the members out itself) or
// a member removed has joined again; otherwise the next coordinator would load
// the removed members back.
func (c *Coordinator) waitBackground(g *shareGroup, removed []string, wait func(context.Context) int16) {
	if wait == nil {
		return
	}
	go func() {
		for attempt := 1; ; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
			code := wait(ctx)
			cancel()
			if code == 0 {
				return
			}
			if attempt == removalWriteAttempts {
				c.cfg.Logger.Warn("share group coordinator: a removal of timed-out members is not written", "group", g.name, "err", kerr.ErrorForCode(code))
				return
			}
			time.Sleep(removalRetryBackoff)
			g.mu.Lock()
			var recs []batch.Record
			if !g.dead.Load() {
				for _, id := range removed {
					if g.members[id] == nil {
						recs = append(recs, memberTombstones(g.name, id)...)
					}
				}
			}
			if len(recs) == 0 {
				g.mu.Unlock()
				return
			}
			recs = append(recs, groupEpochRecord(g.name, g.epoch), targetMetaRecord(g.name, g.epoch))
			wait = c.appendLocked(g, recs)
			g.mu.Unlock()
		}
	}()
}

// Client identifies where a heartbeat came from.
type Client struct{ ID, Host string }

// Heartbeat serves ShareGroupHeartbeat for a group this node coordinates. A
// heartbeat that changes the group is answered once the change is committed.
func (c *Coordinator) Heartbeat(ctx context.Context, req *kmsg.ShareGroupHeartbeatRequest, cl Client) *kmsg.ShareGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.HeartbeatIntervalMillis = int32(c.cfg.settings(req.GroupID).HeartbeatInterval / time.Millisecond)
	fail := func(e *kerr.Error, msg string) *kmsg.ShareGroupHeartbeatResponse {
		resp.ErrorCode = e.Code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	if req.GroupID == "" {
		return fail(kerr.InvalidRequest, "GroupId can't be empty.")
	}
	if req.MemberID == "" {
		return fail(kerr.InvalidRequest, "MemberId can't be empty.")
	}
	partition := int32(-1)
	if c.cfg.MemberLog != nil {
		var code int16
		if partition, code = c.cfg.MemberLog.ShareShard(req.GroupID); code != 0 {
			return fail(kerr.ErrorForCode(code).(*kerr.Error), "")
		}
	}
	if c.isOtherGroup(req.GroupID) {
		return fail(kerr.GroupIDNotFound, "Group "+req.GroupID+" is not a share group.")
	}
	now := c.cfg.Clock()
	c.expireOthers(req.GroupID, now)
	g := c.lockGroup(req.GroupID, req.MemberEpoch == 0, partition)
	switch {
	case g == nil && req.MemberEpoch == -1:
		resp.MemberID, resp.MemberEpoch = &req.MemberID, -1 // left already
		return resp
	case g == nil:
		return fail(kerr.UnknownMemberID, "member "+req.MemberID+" is not in group "+req.GroupID)
	}
	recs, removed := c.expireLocked(g, now) // written and waited for with the heartbeat's
	recs, e, msg := c.heartbeatLocked(g, req, cl, now, resp, recs)
	wait := c.appendLocked(g, recs)
	if e != nil && len(recs) == 0 {
		c.forgetUnsavedLocked(g)
	}
	g.mu.Unlock()
	code := int16(0)
	if wait != nil {
		if code = wait(ctx); code != 0 && len(removed) > 0 {
			// The removals of timed-out members are written again in the background.
			c.waitBackground(g, removed, func(context.Context) int16 { return code })
		}
	}
	if e != nil {
		return fail(e, msg)
	}
	if code != 0 {
		resp.Assignment = nil
		return fail(kerr.ErrorForCode(code).(*kerr.Error), "")
	}
	return resp
}

// heartbeatLocked applies a heartbeat to g, adding the records of its changes to
// recs; e is set when the heartbeat is refused.
func (c *Coordinator) heartbeatLocked(g *shareGroup, req *kmsg.ShareGroupHeartbeatRequest, cl Client, now time.Time,
	resp *kmsg.ShareGroupHeartbeatResponse, recs []batch.Record) (_ []batch.Record, e *kerr.Error, msg string) {
	m := g.members[req.MemberID]
	switch {
	case req.MemberEpoch == -1:
		if m != nil {
			recs = append(recs, c.removeLocked(g, req.MemberID)...)
		}
		resp.MemberID, resp.MemberEpoch = &req.MemberID, -1
		return recs, nil, ""
	case req.MemberEpoch == 0:
		if req.SubscribedTopicNames == nil && m == nil {
			return recs, kerr.InvalidRequest, "SubscribedTopicNames must be set in first request."
		}
		if m == nil {
			m = &member{id: req.MemberID}
			g.members[req.MemberID] = m
		}
		m.assigned = nil // send the assignment again
	case m == nil:
		return recs, kerr.UnknownMemberID, "member " + req.MemberID + " is not in group " + req.GroupID
	case req.MemberEpoch != m.epoch && req.MemberEpoch != m.prevEpoch:
		return recs, kerr.FencedMemberEpoch, "the member epoch is not the current one"
	}
	old := *m
	m.clientID, m.host, m.lastSeen = cl.ID, cl.Host, now
	if req.RackID != nil {
		m.rack = *req.RackID
	}
	if req.SubscribedTopicNames != nil {
		m.subscribed = slices.Clone(req.SubscribedTopicNames)
		sort.Strings(m.subscribed)
	}
	// A join writes the member's metadata even when nothing changed here: the
	// write of an earlier join of the same member may have failed.
	if req.MemberEpoch == 0 || m.clientID != old.clientID || m.host != old.host || m.rack != old.rack || !slices.Equal(m.subscribed, old.subscribed) {
		recs = append(recs, memberRecord(g.name, m))
	}
	want := c.assignmentOf(m.subscribed)
	// A member answered with an old epoch (its last answer was lost) gets its
	// assignment again, as one joining.
	resend := req.MemberEpoch != m.epoch
	if m.assigned == nil || !sameAssignment(m.assigned, want) {
		g.epoch++
		m.prevEpoch, m.epoch = m.epoch, g.epoch
		m.assigned = want
		recs = append(recs, groupEpochRecord(g.name, g.epoch), targetRecord(g.name, m),
			targetMetaRecord(g.name, g.epoch), currentRecord(g.name, m))
		resend = true
	}
	if resend {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		for id, ps := range m.assigned {
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = id, ps
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = &a
	}
	resp.MemberID, resp.MemberEpoch = &req.MemberID, m.epoch
	return recs, nil, ""
}

// forgetUnsavedLocked drops g, locked, when it is empty and in memory only (made
// by a refused first heartbeat): it leaves nothing behind, as in Kafka.
func (c *Coordinator) forgetUnsavedLocked(g *shareGroup) {
	if len(g.members) > 0 || g.epoch != 0 || g.stored || g.ensuring {
		return
	}
	g.dead.Store(true)
	c.mu.Lock()
	if c.mu.groups[g.name] == g {
		delete(c.mu.groups, g.name)
	}
	c.mu.Unlock()
}

// removeLocked removes a member (it left or timed out) and returns the records
// of its removal.
func (c *Coordinator) removeLocked(g *shareGroup, id string) []batch.Record {
	delete(g.members, id)
	g.epoch++
	go c.onLeave(g.name, id)
	recs := memberTombstones(g.name, id)
	return append(recs, groupEpochRecord(g.name, g.epoch), targetMetaRecord(g.name, g.epoch))
}

// assignmentOf is every partition of the subscribed topics that exist.
func (c *Coordinator) assignmentOf(topics []string) map[[16]byte][]int32 {
	out := make(map[[16]byte][]int32)
	for _, t := range topics {
		ti, ok := c.topic(t)
		if !ok {
			continue
		}
		ps := make([]int32, ti.Partitions)
		for i := range ps {
			ps[i] = int32(i)
		}
		out[ti.ID] = ps
	}
	return out
}

func sameAssignment(a, b map[[16]byte][]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// expireLocked removes the members of g not heard from within the session
// timeout and returns the records of their removal and their ids.
func (c *Coordinator) expireLocked(g *shareGroup, now time.Time) (recs []batch.Record, removed []string) {
	if len(g.members) == 0 {
		return nil, nil
	}
	timeout := c.cfg.settings(g.name).SessionTimeout
	for id, m := range g.members {
		if now.Sub(m.lastSeen) > timeout {
			recs = append(recs, c.removeLocked(g, id)...)
			removed = append(removed, id)
		}
	}
	return recs, removed
}

// snapshot returns the groups known here.
func (c *Coordinator) snapshot() []*shareGroup {
	c.mu.Lock()
	defer c.mu.Unlock()
	gs := make([]*shareGroup, 0, len(c.mu.groups))
	for _, g := range c.mu.groups {
		gs = append(gs, g)
	}
	return gs
}

// expireOthers expires the members of every group but skip (whose heartbeat does
// it), skipping groups busy with a request; their removals are written in the
// background.
func (c *Coordinator) expireOthers(skip string, now time.Time) {
	for _, g := range c.snapshot() {
		if g.name == skip || !g.mu.TryLock() {
			continue
		}
		var wait func(context.Context) int16
		var removed []string
		if !g.dead.Load() {
			var recs []batch.Record
			recs, removed = c.expireLocked(g, now)
			wait = c.appendLocked(g, recs)
		}
		g.mu.Unlock()
		c.waitBackground(g, removed, wait)
	}
}

// readGroup calls fn with group name locked, after expiring its members; ok is
// false when the group is unknown here.
func (c *Coordinator) readGroup(name string, fn func(g *shareGroup)) (ok bool) {
	now := c.cfg.Clock()
	c.expireOthers(name, now)
	g := c.lockGroup(name, false, -1)
	if g == nil {
		return false
	}
	recs, removed := c.expireLocked(g, now)
	wait := c.appendLocked(g, recs)
	fn(g)
	g.mu.Unlock()
	c.waitBackground(g, removed, wait)
	return true
}

// Describe answers ShareGroupDescribe for one group: ok false when the group is
// unknown here.
func (c *Coordinator) Describe(name string, topicName func([16]byte) string) (kmsg.ShareGroupDescribeResponseGroup, bool) {
	rg := kmsg.NewShareGroupDescribeResponseGroup()
	rg.GroupID = name
	ok := c.readGroup(name, func(g *shareGroup) {
		rg.GroupState = "Empty"
		if len(g.members) > 0 {
			rg.GroupState = "Stable"
		}
		rg.GroupEpoch, rg.AssignmentEpoch, rg.Assignor = g.epoch, g.epoch, "simple"
		ids := make([]string, 0, len(g.members))
		for id := range g.members {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			m := g.members[id]
			rm := kmsg.NewShareGroupDescribeResponseGroupMember()
			rm.MemberID, rm.ClientID, rm.ClientHost, rm.MemberEpoch = m.id, m.clientID, m.host, m.epoch
			if m.rack != "" {
				r := m.rack
				rm.RackID = &r
			}
			rm.SubscribedTopicNames = slices.Clone(m.subscribed)
			for tid, ps := range m.assigned {
				tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
				tp.TopicID, tp.Topic, tp.Partitions = tid, topicName(tid), ps
				rm.Assignment.TopicPartitions = append(rm.Assignment.TopicPartitions, tp)
			}
			rg.Members = append(rg.Members, rm)
		}
	})
	return rg, ok
}

// Groups returns the names of the share groups known here.
func (c *Coordinator) Groups() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.mu.groups))
	for n := range c.mu.groups {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Serving returns 0 when this node coordinates group and has loaded its
// partition, else the code to answer (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS): until the load, a group with members looks
// unknown and empty here.
func (c *Coordinator) Serving(group string) int16 {
	if c.cfg.MemberLog == nil {
		return 0
	}
	_, code := c.cfg.MemberLog.ShareShard(group)
	return code
}

// Delete removes an empty share group, and its records, and returns once their
// tombstones are committed: NON_EMPTY_GROUP while it has members,
// GROUP_ID_NOT_FOUND when unknown, the code of Serving while its partition is
// not loaded here, the code of the write when it fails (the group then stays).
func (c *Coordinator) Delete(ctx context.Context, name string) int16 {
	if code := c.Serving(name); code != 0 {
		return code
	}
	now := c.cfg.Clock()
	g := c.lockGroup(name, false, -1)
	if g == nil {
		return kerr.GroupIDNotFound.Code
	}
	recs, removed := c.expireLocked(g, now)
	if len(g.members) > 0 {
		wait := c.appendLocked(g, recs)
		g.mu.Unlock()
		c.waitBackground(g, removed, wait)
		return kerr.NonEmptyGroup.Code
	}
	// The tombstones are appended, and waited for, before the group leaves the
	// map and with it locked: no member joins it meanwhile, and a group of the
	// same name made next writes after them. Should they not be committed, the
	// group stays, so that deleting it again writes them again.
	if wait := c.appendLocked(g, append(recs, groupTombstones(name)...)); wait != nil {
		if code := wait(ctx); code != 0 {
			g.mu.Unlock()
			return code
		}
	}
	g.dead.Store(true)
	c.mu.Lock()
	if c.mu.groups[name] == g {
		delete(c.mu.groups, name)
	}
	c.mu.Unlock()
	g.mu.Unlock()
	return 0
}

// Has reports whether name is a share group known here.
func (c *Coordinator) Has(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.mu.groups[name]
	return ok
}

// Members returns how many members group has (0 when unknown).
func (c *Coordinator) Members(name string) int {
	n := 0
	c.readGroup(name, func(g *shareGroup) { n = len(g.members) })
	return n
}

// Ensure makes name a known (empty) share group, as AlterShareGroupOffsets does,
// and returns once the group's epoch record is committed, so that the next
// coordinator loads the group too (Kafka persists such a group). It answers the
// code of Serving, and makes nothing, while the group's partition is not loaded
// here, and the code of a failed write (the group is then written again by the
// next Ensure). The id of a classic or consumer group is GROUP_ID_NOT_FOUND
// (Kafka keeps one group per id) and makes nothing.
func (c *Coordinator) Ensure(ctx context.Context, name string) int16 {
	partition := int32(-1)
	if c.cfg.MemberLog != nil {
		var code int16
		if partition, code = c.cfg.MemberLog.ShareShard(name); code != 0 {
			return code
		}
	}
	if c.isOtherGroup(name) {
		return kerr.GroupIDNotFound.Code
	}
	g := c.lockGroup(name, true, partition)
	var wait func(context.Context) int16
	if g.epoch == 0 && !g.stored { // made here, and no member ever wrote it
		wait = c.appendLocked(g, []batch.Record{groupEpochRecord(name, g.epoch)})
		g.ensuring = wait != nil
	}
	if c.cfg.MemberLog == nil {
		g.stored = true // nowhere to write it: known here is all there is
	}
	g.mu.Unlock()
	if wait == nil {
		return 0
	}
	code := wait(ctx)
	g.mu.Lock()
	g.ensuring = false
	g.stored = g.stored || code == 0
	g.mu.Unlock()
	return code
}

// ListGroups lists the share groups known here, with protocol type and group type
// "share" and their state (kafkaapi.GroupLister); ListGroups filters them.
func (c *Coordinator) ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	for _, n := range c.Groups() {
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupType, lg.GroupState = n, "share", "share", "Empty"
		if !c.readGroup(n, func(g *shareGroup) {
			if len(g.members) > 0 {
				lg.GroupState = "Stable"
			}
		}) {
			continue
		}
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}
