package sharegroup

// Share group membership at the group coordinator: ShareGroupHeartbeat and
// ShareGroupDescribe. Every member is assigned every partition of the topics it
// subscribes to (the share-partitions divide the records, not the partitions).

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicInfo is what the coordinator knows of a topic.
type TopicInfo struct {
	ID         [16]byte
	Partitions int32
}

type member struct {
	id, clientID, host, rack string
	epoch                    int32
	subscribed               []string
	assigned                 map[[16]byte][]int32
	lastSeen                 time.Time
}

type shareGroup struct {
	name    string
	epoch   int32
	members map[string]*member
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

// Client identifies where a heartbeat came from.
type Client struct{ ID, Host string }

// Heartbeat serves ShareGroupHeartbeat for a group this node coordinates.
func (c *Coordinator) Heartbeat(req *kmsg.ShareGroupHeartbeatRequest, cl Client) *kmsg.ShareGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.HeartbeatIntervalMillis = int32(c.cfg.settings(req.GroupID).HeartbeatInterval / time.Millisecond)
	fail := func(e *kerr.Error, msg string) *kmsg.ShareGroupHeartbeatResponse {
		resp.ErrorCode, resp.ErrorMessage = e.Code, &msg
		return resp
	}
	if req.GroupID == "" {
		return fail(kerr.InvalidRequest, "GroupId can't be empty.")
	}
	if req.MemberID == "" {
		return fail(kerr.InvalidRequest, "MemberId can't be empty.")
	}
	now := c.cfg.Clock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked(now)
	g := c.mu.groups[req.GroupID]
	if g == nil {
		g = &shareGroup{name: req.GroupID, members: make(map[string]*member)}
		c.mu.groups[req.GroupID] = g
	}
	m := g.members[req.MemberID]
	switch {
	case req.MemberEpoch == -1:
		if m != nil {
			delete(g.members, req.MemberID)
			g.epoch++
			go c.onLeave(g.name, req.MemberID)
		}
		resp.MemberID, resp.MemberEpoch = &req.MemberID, -1
		return resp
	case req.MemberEpoch == 0:
		if req.SubscribedTopicNames == nil && m == nil {
			return fail(kerr.InvalidRequest, "SubscribedTopicNames must be set in first request.")
		}
		if m == nil {
			m = &member{id: req.MemberID}
			g.members[req.MemberID] = m
		}
		m.assigned = nil // send the assignment again
		m.epoch = 0
	case m == nil:
		return fail(kerr.UnknownMemberID, "member "+req.MemberID+" is not in group "+req.GroupID)
	case req.MemberEpoch != m.epoch:
		return fail(kerr.FencedMemberEpoch, "the member epoch is not the current one")
	}
	m.clientID, m.host, m.lastSeen = cl.ID, cl.Host, now
	if req.RackID != nil {
		m.rack = *req.RackID
	}
	if req.SubscribedTopicNames != nil {
		m.subscribed = slices.Clone(req.SubscribedTopicNames)
		sort.Strings(m.subscribed)
	}
	want := c.assignmentOf(m.subscribed)
	if m.assigned == nil || !sameAssignment(m.assigned, want) {
		g.epoch++
		m.epoch = g.epoch
		m.assigned = want
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		for id, ps := range want {
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = id, ps
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = &a
	}
	resp.MemberID, resp.MemberEpoch = &req.MemberID, m.epoch
	return resp
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

// expireLocked removes members not heard from within the session timeout.
func (c *Coordinator) expireLocked(now time.Time) {
	for _, g := range c.mu.groups {
		if len(g.members) == 0 {
			continue
		}
		timeout := c.cfg.settings(g.name).SessionTimeout
		for id, m := range g.members {
			if now.Sub(m.lastSeen) > timeout {
				delete(g.members, id)
				g.epoch++
				go c.onLeave(g.name, id)
			}
		}
	}
}

// Describe answers ShareGroupDescribe for one group: ok false when the group is
// unknown here.
func (c *Coordinator) Describe(name string, topicName func([16]byte) string) (kmsg.ShareGroupDescribeResponseGroup, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked(c.cfg.Clock())
	rg := kmsg.NewShareGroupDescribeResponseGroup()
	rg.GroupID = name
	g := c.mu.groups[name]
	if g == nil {
		return rg, false
	}
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
	return rg, true
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

// Delete removes an empty share group: NON_EMPTY_GROUP while it has members,
// GROUP_ID_NOT_FOUND when unknown.
func (c *Coordinator) Delete(name string) int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked(c.cfg.Clock())
	g := c.mu.groups[name]
	switch {
	case g == nil:
		return kerr.GroupIDNotFound.Code
	case len(g.members) > 0:
		return kerr.NonEmptyGroup.Code
	}
	delete(c.mu.groups, name)
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
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked(c.cfg.Clock())
	if g := c.mu.groups[name]; g != nil {
		return len(g.members)
	}
	return 0
}

// Ensure makes name a known (empty) share group, as AlterShareGroupOffsets does.
func (c *Coordinator) Ensure(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.groups[name] == nil {
		c.mu.groups[name] = &shareGroup{name: name, members: make(map[string]*member)}
	}
}

// ListGroups lists the share groups known here, with protocol type and group type
// "share" and their state (kafkaapi.GroupLister); ListGroups filters them.
func (c *Coordinator) ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked(c.cfg.Clock())
	names := make([]string, 0, len(c.mu.groups))
	for n := range c.mu.groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g := kmsg.NewListGroupsResponseGroup()
		g.Group, g.ProtocolType, g.GroupType, g.GroupState = n, "share", "share", "Empty"
		if len(c.mu.groups[n].members) > 0 {
			g.GroupState = "Stable"
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}
