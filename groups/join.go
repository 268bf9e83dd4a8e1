package groups

// Membership requests: JoinGroup, SyncGroup, Heartbeat, LeaveGroup. The checks and
// their order are Kafka's (GroupCoordinator.scala), so that clients see the errors
// they were written against.

import (
	"bytes"
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
)

// JoinGroup handles a JoinGroup request; it blocks until the rebalance it joins
// completes (or ctx ends: COORDINATOR_NOT_AVAILABLE, so the client retries).
func (c *Coordinator) JoinGroup(ctx context.Context, cl Client, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.Generation, resp.MemberID = -1, req.MemberID
	resp.Protocol = kmsg.StringPtr("")
	fail := func(code int16) *kmsg.JoinGroupResponse {
		resp.ErrorCode = code
		return resp
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 {
		rebalance = session // v0 has no rebalance timeout: the session timeout is used
	}
	switch {
	case req.Group == "":
		return fail(kerr.InvalidGroupID.Code)
	case session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout:
		return fail(kerr.InvalidSessionTimeout.Code)
	case req.ProtocolType == "" || len(req.Protocols) == 0:
		return fail(kerr.InconsistentGroupProtocol.Code)
	case c.isShareGroup(req.Group):
		resp.MemberID = "" // as Kafka answers a join to a share group
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	g, code := c.lockGroup(req.Group, req.MemberID == "")
	switch {
	case code != 0:
		return fail(code)
	case g == nil:
		return fail(kerr.UnknownMemberID.Code)
	}
	if g.cg != nil {
		if len(g.cg.members) > 0 {
			// A consumer group with members serves a classic member itself
			// (consumer_classic.go), answering once its records are applied.
			r, recs := g.classicJoinLocked(cl, req, session, rebalance)
			var last int64
			var err error
			if len(recs) > 0 {
				last, err = g.appendLocked(recs)
			}
			sh := g.sh
			g.mu.Unlock()
			if r.ErrorCode == 0 && len(recs) > 0 {
				if err == nil {
					err = sh.waitApplied(ctx, last)
				}
				if code := waitCode(ctx, err); code != 0 {
					return fail(code)
				}
			}
			return r
		}
		g.becomeClassicLocked()
	}
	wait, r := g.joinLocked(cl, req, session, rebalance)
	g.mu.Unlock()
	if r != nil {
		return r
	}
	select {
	case r := <-wait:
		return r
	case <-ctx.Done():
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
}

// joinLocked returns either an answer now or a channel on which the held answer
// will come.
func (g *group) joinLocked(cl Client, req *kmsg.JoinGroupRequest, session, rebalance time.Duration) (chan *kmsg.JoinGroupResponse, *kmsg.JoinGroupResponse) {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.Generation, resp.MemberID = -1, req.MemberID
	resp.Protocol = kmsg.StringPtr("")
	fail := func(code int16) (chan *kmsg.JoinGroupResponse, *kmsg.JoinGroupResponse) {
		resp.ErrorCode = code
		return nil, resp
	}
	if g.state != stateEmpty && !g.supportsLocked(req.ProtocolType, req.Protocols, req.MemberID) {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	fill := func(m *member) {
		m.clientID, m.clientHost = cl.ID, cl.Host
		m.sessionTimeout, m.rebalanceTimeout = session, rebalance
		m.protocolType = req.ProtocolType
		m.protocols = m.protocols[:0]
		for _, p := range req.Protocols {
			// Copied: request bytes alias the connection's buffer, reused after the answer.
			m.protocols = append(m.protocols, protocol{name: p.Name, metadata: bytes.Clone(p.Metadata)})
		}
	}
	hold := func(m *member) chan *kmsg.JoinGroupResponse {
		if m.join != nil {
			// A second JoinGroup while one is held: the first is superseded.
			m.join <- &kmsg.JoinGroupResponse{Version: m.joinVer, ErrorCode: kerr.RebalanceInProgress.Code, Generation: -1, MemberID: m.id, Protocol: kmsg.StringPtr("")}
		}
		ch := make(chan *kmsg.JoinGroupResponse, 1)
		m.join, m.joinVer = ch, req.Version
		return ch
	}

	if req.MemberID == "" {
		if req.InstanceID != nil {
			if old := g.members[g.static[*req.InstanceID]]; old != nil {
				return g.replaceStaticLocked(old, cl, req, fill, hold)
			}
		}
		if len(g.members)+len(g.pending) >= g.c.cfg.MaxGroupSize {
			return fail(kerr.GroupMaxSizeReached.Code)
		}
		id := newMemberID(cl.ID, req.InstanceID)
		if req.Version >= 4 && req.InstanceID == nil {
			// KIP-394: the member must join again with this id, so that a client
			// whose JoinGroup timed out does not leave an unknown member behind.
			g.addPendingLocked(id, session)
			resp.MemberID = id
			return fail(kerr.MemberIDRequired.Code)
		}
		m := &member{id: id, instanceID: req.InstanceID}
		fill(m)
		return g.addMemberLocked(m, hold(m)), nil
	}

	if req.InstanceID != nil && g.static[*req.InstanceID] != req.MemberID {
		if _, known := g.static[*req.InstanceID]; known {
			return fail(kerr.FencedInstanceID.Code)
		}
	}
	if g.removePendingLocked(req.MemberID) {
		m := &member{id: req.MemberID, instanceID: req.InstanceID}
		fill(m)
		return g.addMemberLocked(m, hold(m)), nil
	}
	m := g.members[req.MemberID]
	if m == nil {
		return fail(kerr.UnknownMemberID.Code)
	}
	switch g.state {
	case statePreparingRebalance:
		fill(m)
		ch := hold(m)
		g.heartbeatLocked(m)
		g.tryCompleteJoinLocked()
		return ch, nil
	case stateCompletingRebalance:
		if m.sameProtocols(req.Protocols) {
			// A retry of a join that already completed: answer with this generation.
			g.heartbeatLocked(m)
			return nil, g.joinResponseLocked(m, req.Version)
		}
		fill(m)
		ch := hold(m)
		g.prepareRebalanceLocked()
		return ch, nil
	case stateStable:
		if m.id != g.leader && m.sameProtocols(req.Protocols) {
			// Nothing changes for a follower: answer with this generation.
			g.heartbeatLocked(m)
			return nil, g.joinResponseLocked(m, req.Version)
		}
		// The leader rejoins (it wants a new assignment) or a member changed its
		// subscription: rebalance.
		fill(m)
		ch := hold(m)
		g.heartbeatLocked(m)
		g.prepareRebalanceLocked()
		return ch, nil
	default:
		return fail(kerr.UnknownMemberID.Code)
	}
}

// addMemberLocked adds a new member waiting in JoinGroup and rebalances.
func (g *group) addMemberLocked(m *member, ch chan *kmsg.JoinGroupResponse) chan *kmsg.JoinGroupResponse {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	g.seq++
	m.joinedSeq = g.seq
	g.members[m.id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
	if g.generation == 0 {
		g.newMembers = true // extends the initial delay of a new group (Kafka's rule)
	}
	g.heartbeatLocked(m)
	if g.state == statePreparingRebalance {
		g.tryCompleteJoinLocked()
	} else {
		g.prepareRebalanceLocked()
	}
	return ch
}

// replaceStaticLocked handles a static member (group.instance.id) joining again
// without its member id, e.g. after a restart (KIP-345): it takes over the old
// member's place and assignment under a new member id. In a Stable group with the
// same protocols nothing is rebalanced; the old member id is fenced.
func (g *group) replaceStaticLocked(old *member, cl Client, req *kmsg.JoinGroupRequest,
	fill func(*member), hold func(*member) chan *kmsg.JoinGroupResponse) (chan *kmsg.JoinGroupResponse, *kmsg.JoinGroupResponse) {
	oldLeader := g.leader
	sameProtocols := old.sameProtocols(req.Protocols)
	m := &member{id: newMemberID(cl.ID, req.InstanceID), instanceID: req.InstanceID,
		assignment: old.assignment, joinedSeq: old.joinedSeq, syncedGen: old.syncedGen}
	fill(m)
	g.dropMemberLocked(old, kerr.FencedInstanceID.Code)
	g.members[m.id] = m
	g.static[*m.instanceID] = m.id
	if g.leader == "" || g.leader == old.id {
		g.leader = m.id
	}
	g.heartbeatLocked(m)
	switch {
	case g.state == stateStable && sameProtocols:
		g.storeAsyncLocked()
		r := g.joinResponseLocked(m, req.Version)
		// The previous leader id, so that the member (even if it leads) does not
		// compute a new assignment that a Stable group would not hand out.
		r.LeaderID = oldLeader
		r.Members = nil
		return nil, r
	case g.state == statePreparingRebalance:
		ch := hold(m)
		g.tryCompleteJoinLocked()
		return ch, nil
	default:
		ch := hold(m)
		g.prepareRebalanceLocked()
		return ch, nil
	}
}

// fencedLocked reports whether a request naming instance id inst and member id
// memberID comes from a static member that was replaced.
func (g *group) fencedLocked(inst *string, memberID string) bool {
	if inst == nil {
		return false
	}
	id, ok := g.static[*inst]
	return ok && id != memberID
}

// SyncGroup handles a SyncGroup request: the leader's carries the assignment, which
// is stored in the log before any member gets its part. It blocks until then.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	fail := func(code int16) *kmsg.SyncGroupResponse {
		resp.ErrorCode = code
		return resp
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID.Code)
	}
	g, code := c.lockGroup(req.Group, false)
	switch {
	case code != 0:
		return fail(code)
	case g == nil:
		return fail(kerr.UnknownMemberID.Code)
	}
	if g.cg != nil {
		defer g.mu.Unlock()
		return g.classicSyncLocked(req)
	}
	if g.fencedLocked(req.InstanceID, req.MemberID) {
		g.mu.Unlock()
		return fail(kerr.FencedInstanceID.Code)
	}
	m := g.members[req.MemberID]
	switch {
	case m == nil:
		code = kerr.UnknownMemberID.Code
	case req.Generation != g.generation:
		code = kerr.IllegalGeneration.Code
	case g.state == stateEmpty:
		code = kerr.UnknownMemberID.Code
	case g.state == statePreparingRebalance:
		code = kerr.RebalanceInProgress.Code
	case g.state == stateStable:
		g.heartbeatLocked(m)
		resp.MemberAssignment = m.assignment
		if resp.MemberAssignment == nil {
			resp.MemberAssignment = []byte{}
		}
		g.mu.Unlock()
		return resp
	}
	if code != 0 {
		g.mu.Unlock()
		return fail(code)
	}

	// CompletingRebalance: wait for the leader's assignment.
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	if m.sync != nil {
		m.sync <- &kmsg.SyncGroupResponse{ErrorCode: kerr.RebalanceInProgress.Code}
	}
	m.sync, m.syncedGen = ch, g.generation
	g.heartbeatLocked(m)
	if m.id == g.leader {
		g.completeSyncLocked(ctx, req) // unlocks and locks g.mu while waiting
	}
	g.mu.Unlock()
	select {
	case r := <-ch:
		r.Version = req.Version
		return r
	case <-ctx.Done():
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
}

// completeSyncLocked stores the leader's assignment with the group's metadata and,
// once the record is applied, makes the group Stable and answers every held
// SyncGroup. It releases g.mu while it waits, and holds it again on return.
func (g *group) completeSyncLocked(ctx context.Context, req *kmsg.SyncGroupRequest) {
	gen := g.generation
	assigned := make(map[string][]byte, len(req.GroupAssignment))
	for _, a := range req.GroupAssignment {
		assigned[a.MemberID] = bytes.Clone(a.MemberAssignment) // see fill in joinLocked
	}
	for id, m := range g.members {
		m.assignment = assigned[id]
		if m.assignment == nil {
			m.assignment = []byte{}
		}
	}
	offset, err := g.storeLocked()
	if err == nil {
		g.mu.Unlock()
		err = g.sh.waitApplied(ctx, offset)
		g.mu.Lock()
	}
	if g.state != stateCompletingRebalance || g.generation != gen {
		return // the group moved on meanwhile; its syncs were answered
	}
	if err != nil {
		g.c.logger.Warn("group coordinator: storing the assignment failed", "group", g.name, "generation", gen, "err", err)
		code := waitCode(ctx, err)
		for _, m := range g.members {
			m.assignment = nil
			if m.sync != nil {
				m.sync <- &kmsg.SyncGroupResponse{ErrorCode: code}
				m.sync = nil
			}
		}
		g.prepareRebalanceLocked()
		return
	}
	g.disarmLocked()
	g.setStateLocked(stateStable)
	for _, m := range g.members {
		if m.sync != nil {
			p, pt := g.protocol, g.protocolType
			m.sync <- &kmsg.SyncGroupResponse{MemberAssignment: m.assignment, Protocol: &p, ProtocolType: &pt}
			m.sync = nil
		}
	}
}

// Heartbeat handles a Heartbeat request: it keeps the member's session alive and
// tells it when the group rebalances (REBALANCE_IN_PROGRESS: join again).
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
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
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp
	}
	defer g.mu.Unlock()
	if g.cg != nil {
		resp.ErrorCode = g.classicHeartbeatLocked(req)
		return resp
	}
	m := g.members[req.MemberID]
	switch {
	case g.fencedLocked(req.InstanceID, req.MemberID):
		resp.ErrorCode = kerr.FencedInstanceID.Code
	case m == nil:
		resp.ErrorCode = kerr.UnknownMemberID.Code
	case req.Generation != g.generation:
		resp.ErrorCode = kerr.IllegalGeneration.Code
	case g.state == statePreparingRebalance:
		g.heartbeatLocked(m)
		resp.ErrorCode = kerr.RebalanceInProgress.Code
	case g.state == stateCompletingRebalance, g.state == stateStable:
		g.heartbeatLocked(m)
	default:
		resp.ErrorCode = kerr.UnknownMemberID.Code
	}
	return resp
}

// LeaveGroup handles a LeaveGroup request: v0..2 name one member, v3 a list (by
// member id or group.instance.id), each answered on its own.
func (c *Coordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	answer := func(code int16) *kmsg.LeaveGroupResponse {
		if req.Version < 3 {
			if code == 0 && len(resp.Members) > 0 {
				code = resp.Members[0].ErrorCode
			}
			resp.Members = nil
		}
		resp.ErrorCode = code
		return resp
	}
	if req.Group == "" {
		return answer(kerr.InvalidGroupID.Code)
	}
	g, code := c.lockGroup(req.Group, false)
	if code != 0 {
		return answer(code)
	}
	for _, lm := range leaving {
		rm := kmsg.LeaveGroupResponseMember{MemberID: lm.MemberID, InstanceID: lm.InstanceID}
		if g != nil && g.cg != nil {
			var recs []batch.Record
			rm.ErrorCode, recs = g.classicLeaveLocked(lm)
			g.storeConsumerAsyncLocked(recs)
		} else {
			rm.ErrorCode = g.leaveLocked(lm)
		}
		resp.Members = append(resp.Members, rm)
	}
	if g != nil {
		g.mu.Unlock()
	}
	return answer(0)
}

// leaveLocked removes one leaving member; g may be nil (an unknown group).
func (g *group) leaveLocked(lm kmsg.LeaveGroupRequestMember) int16 {
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	id := lm.MemberID
	if lm.InstanceID != nil {
		sid, ok := g.static[*lm.InstanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID.Code
		case id != "" && id != sid:
			return kerr.FencedInstanceID.Code
		}
		id = sid
	}
	if g.removePendingLocked(id) {
		if g.state == statePreparingRebalance {
			g.tryCompleteJoinLocked()
		}
		return 0
	}
	m := g.members[id]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	g.c.logger.Debug("group coordinator: member left", "group", g.name, "member_id", id)
	g.removeMemberLocked(m, kerr.UnknownMemberID.Code)
	return 0
}
