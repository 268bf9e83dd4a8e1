package groups

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/offsets"
)

// TestPartitionFor checks Kafka's choice: abs(String.hashCode) mod n, with the
// hash over UTF-16 code units ("😀" is a surrogate pair) and Kafka's abs of
// Integer.MIN_VALUE ("polygenelubricants") being 0. Expected values were computed
// independently with Java's algorithm.
func TestPartitionFor(t *testing.T) {
	for _, tc := range []struct {
		group  string
		n, out int32
	}{
		{"", 16, 0}, {"a", 16, 1}, {"a", 50, 47}, {"group", 16, 15}, {"my-consumer-group", 16, 9},
		{"skiff-queue", 16, 11}, {"skiff-queue", 50, 35}, {"été", 16, 14}, {"😀grp", 50, 36},
		{"polygenelubricants", 16, 0},
	} {
		if got := PartitionFor(tc.group, tc.n); got != tc.out {
			t.Errorf("PartitionFor(%q, %d) = %d, want %d", tc.group, tc.n, got, tc.out)
		}
	}
}

// TestJoinSyncRebalance walks a group through its states: one member joins (it
// leads), syncs an assignment and the group is Stable; a second member's join is
// held, the first learns of the rebalance from its heartbeat and rejoins, the leader
// gets both members' metadata, the follower's SyncGroup is held until the leader's
// assignment is stored, and each gets its own bytes back unread.
func TestJoinSyncRebalance(t *testing.T) {
	e := newEnv(t)
	m1, j1 := e.newMember("g")
	r1 := recv(t, "join of m1", j1)
	wantCode(t, "join m1", r1.ErrorCode, nil)
	if r1.Generation != 1 || r1.LeaderID != m1 || *r1.Protocol != "range" || len(r1.Members) != 1 {
		t.Fatalf("join m1: %+v", r1)
	}
	e.waitState("g", "CompletingRebalance")
	s1 := recv(t, "sync m1", e.syncAsync("g", m1, 1, map[string]string{m1: "\x00opaque-1"}))
	wantCode(t, "sync m1", s1.ErrorCode, nil)
	if string(s1.MemberAssignment) != "\x00opaque-1" {
		t.Fatalf("m1 assignment %q", s1.MemberAssignment)
	}
	e.waitState("g", "Stable")
	wantCode(t, "heartbeat stable", e.heartbeat("g", m1, 1), nil)

	m2, j2 := e.newMember("g")
	e.waitState("g", "PreparingRebalance")
	held(t, "join of m2", j2)
	wantCode(t, "heartbeat during rebalance", e.heartbeat("g", m1, 1), kerr.RebalanceInProgress)
	j1 = e.joinAsync(joinReq(5, "g", m1))
	r1, r2 := recv(t, "rejoin m1", j1), recv(t, "join m2", j2)
	if r1.Generation != 2 || r2.Generation != 2 || r1.LeaderID != m1 || r2.LeaderID != m1 {
		t.Fatalf("generation 2: m1 %+v, m2 %+v", r1, r2)
	}
	if len(r1.Members) != 2 || len(r2.Members) != 0 || string(r1.Members[1].ProtocolMetadata) != "meta-range" {
		t.Fatalf("leader got %+v, follower got %+v", r1.Members, r2.Members)
	}
	sy2 := e.syncAsync("g", m2, 2, nil)
	e.waitHeld("g", m2, false)
	held(t, "follower's sync", sy2)
	s1 = recv(t, "leader's sync", e.syncAsync("g", m1, 2, map[string]string{m1: "a1", m2: "a2"}))
	s2 := recv(t, "follower's sync", sy2)
	if string(s1.MemberAssignment) != "a1" || string(s2.MemberAssignment) != "a2" {
		t.Fatalf("assignments %q %q", s1.MemberAssignment, s2.MemberAssignment)
	}
	d := e.describe("g")
	if d.State != "Stable" || d.Protocol != "range" || d.ProtocolType != "consumer" || len(d.Members) != 2 {
		t.Fatalf("describe: %+v", d)
	}

	// A member leaves: the other rejoins alone.
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.SetVersion(3)
	lr.Group = "g"
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: m2}, {MemberID: "nobody"}}
	resp := e.c.LeaveGroup(lr)
	if resp.ErrorCode != 0 || resp.Members[0].ErrorCode != 0 || resp.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave: %+v", resp)
	}
	wantCode(t, "heartbeat after leave", e.heartbeat("g", m1, 2), kerr.RebalanceInProgress)
	r1 = recv(t, "rejoin alone", e.joinAsync(joinReq(5, "g", m1)))
	if r1.Generation != 3 || len(r1.Members) != 1 {
		t.Fatalf("rejoin alone: %+v", r1)
	}
	// The last member leaves (v0): the group is Empty, a new generation.
	lr = kmsg.NewPtrLeaveGroupRequest()
	lr.SetVersion(0)
	lr.Group, lr.MemberID = "g", m1
	wantCode(t, "leave v0", e.c.LeaveGroup(lr).ErrorCode, nil)
	e.waitState("g", "Empty")
}

// TestMemberIDRequired: JoinGroup v4+ answers a new dynamic member with
// MEMBER_ID_REQUIRED and a member id; v0..3 let it in at once; a static member
// (v5 with group.instance.id) too.
func TestMemberIDRequired(t *testing.T) {
	e := newEnv(t)
	for v := int16(0); v <= 5; v++ {
		req := joinReq(v, "g", "")
		if v == 5 {
			inst := "static-1"
			req.InstanceID = &inst
		}
		r := recv(t, "join", e.joinAsync(req))
		switch {
		case v == 4:
			wantCode(t, "join v4", r.ErrorCode, kerr.MemberIDRequired)
			r = recv(t, "join v4 again", e.joinAsync(joinReq(v, "g", r.MemberID)))
			fallthrough
		default:
			wantCode(t, "join", r.ErrorCode, nil)
			if r.MemberID == "" || r.Generation < 1 {
				t.Fatalf("v%d: %+v", v, r)
			}
		}
		lr := kmsg.NewPtrLeaveGroupRequest()
		lr.SetVersion(0)
		lr.Group, lr.MemberID = "g", r.MemberID
		wantCode(t, "leave", e.c.LeaveGroup(lr).ErrorCode, nil)
	}
}

// TestSessionTimeoutEvicts: a member that stops heartbeating is removed after its
// session timeout, and the others rebalance without it.
func TestSessionTimeoutEvicts(t *testing.T) {
	e := newEnv(t)
	m1, j1 := e.newMember("g")
	recv(t, "join m1", j1)
	recv(t, "sync m1", e.syncAsync("g", m1, 1, nil))
	m2, j2 := e.newMember("g")
	j1 = e.joinAsync(joinReq(5, "g", m1))
	recv(t, "join m1", j1)
	recv(t, "join m2", j2)
	s2 := e.syncAsync("g", m2, 2, nil)
	recv(t, "sync m1", e.syncAsync("g", m1, 2, nil))
	recv(t, "sync m2", s2)
	e.waitState("g", "Stable")

	// m1 heartbeats every 4 s, m2 never again: after 6 s m2 is gone.
	for range 3 {
		e.clock.Advance(4 * time.Second)
		code := e.heartbeat("g", m1, 2)
		if code != 0 && code != kerr.RebalanceInProgress.Code {
			t.Fatalf("heartbeat m1: %v", kerr.ErrorForCode(code))
		}
	}
	wantCode(t, "heartbeat of the evicted member", e.heartbeat("g", m2, 2), kerr.UnknownMemberID)
	wantCode(t, "heartbeat m1", e.heartbeat("g", m1, 2), kerr.RebalanceInProgress)
	r := recv(t, "rejoin", e.joinAsync(joinReq(5, "g", m1)))
	if r.Generation != 3 || len(r.Members) != 1 || r.Members[0].MemberID != m1 {
		t.Fatalf("after eviction: %+v", r)
	}
}

// TestRebalanceTimeout: a member that does not rejoin within the rebalance
// timeout is dropped and the rebalance completes with the others; a pending member
// id (MEMBER_ID_REQUIRED) that is never used does not stall it past its session.
func TestRebalanceTimeout(t *testing.T) {
	e := newEnv(t)
	m1, j1 := e.newMember("g")
	recv(t, "join m1", j1)
	recv(t, "sync m1", e.syncAsync("g", m1, 1, nil))
	m2, j2 := e.newMember("g")
	j1 = e.joinAsync(joinReq(5, "g", m1))
	recv(t, "join m1", j1)
	recv(t, "join m2", j2)
	s2 := e.syncAsync("g", m2, 2, nil)
	recv(t, "sync m1", e.syncAsync("g", m1, 2, nil))
	recv(t, "sync m2", s2)

	m3, j3 := e.newMember("g")
	j1 = e.joinAsync(joinReq(5, "g", m1))
	e.waitHeld("g", m1, true)
	// m2 heartbeats but does not rejoin; m1 and m3 wait in JoinGroup, kept alive
	// past their session timeouts.
	for range 2 {
		e.clock.Advance(4 * time.Second)
		wantCode(t, "heartbeat m2", e.heartbeat("g", m2, 2), kerr.RebalanceInProgress)
	}
	e.clock.Advance(time.Second)
	e.waitHeld("g", m1, true)
	e.waitHeld("g", m3, true)
	e.clock.Advance(time.Second)
	r1, r3 := recv(t, "join m1", j1), recv(t, "join m3", j3)
	if r1.Generation != 3 || len(r1.Members) != 2 || r3.LeaderID != m1 || r3.MemberID != m3 {
		t.Fatalf("after the rebalance timeout: %+v %+v", r1, r3)
	}
	wantCode(t, "heartbeat of the dropped member", e.heartbeat("g", m2, 2), kerr.UnknownMemberID)
	recv(t, "sync m1", e.syncAsync("g", m1, 3, nil)) // the leader's sync settles the group
	e.waitState("g", "Stable")
}

// TestSyncTimeout: when the leader never sends SyncGroup, the followers' held
// SyncGroups end with REBALANCE_IN_PROGRESS once the rebalance timeout passes, and
// the leader is dropped.
func TestSyncTimeout(t *testing.T) {
	e := newEnv(t)
	m1, j1 := e.newMember("g")
	recv(t, "join m1", j1)
	recv(t, "sync m1", e.syncAsync("g", m1, 1, nil))
	m2, j2 := e.newMember("g")
	j1 = e.joinAsync(joinReq(5, "g", m1))
	recv(t, "join m1", j1)
	recv(t, "join m2", j2)
	s2 := e.syncAsync("g", m2, 2, nil)
	e.waitHeld("g", m2, false)
	e.clock.Advance(10 * time.Second)
	wantCode(t, "follower's sync", recv(t, "sync m2", s2).ErrorCode, kerr.RebalanceInProgress)
	wantCode(t, "heartbeat of the silent leader", e.heartbeat("g", m1, 2), kerr.UnknownMemberID)
}

// TestInitialRebalanceDelay: the first rebalance of a new group waits
// group.initial.rebalance.delay.ms, longer while members keep joining, so that
// members starting together land in one generation.
func TestInitialRebalanceDelay(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.InitialRebalanceDelay = 3 * time.Second })
	_, j1 := e.newMember("g")
	e.clock.Advance(2 * time.Second)
	_, j2 := e.newMember("g")
	e.clock.Advance(1 * time.Second) // the first delay ends; a member joined in it
	held(t, "join 1", j1)
	_, j3 := e.newMember("g")
	e.clock.Advance(3 * time.Second)
	held(t, "join 3", j3)
	e.clock.Advance(3 * time.Second) // no join in the last delay: complete
	for i, j := range []<-chan *kmsg.JoinGroupResponse{j1, j2, j3} {
		r := recv(t, "join", j)
		if r.Generation != 1 {
			t.Fatalf("member %d joined generation %d, want all in 1", i+1, r.Generation)
		}
	}
}

// TestStaticMembership: a static member (group.instance.id) that restarts joins
// with no member id and gets a new id, the same generation and its old assignment
// without a rebalance; its old id is fenced.
func TestStaticMembership(t *testing.T) {
	e := newEnv(t)
	inst := "pod-1"
	join := func(member string) *kmsg.JoinGroupRequest {
		r := joinReq(5, "g", member)
		r.InstanceID = &inst
		return r
	}
	r := recv(t, "static join", e.joinAsync(join("")))
	wantCode(t, "static join", r.ErrorCode, nil)
	old := r.MemberID
	recv(t, "sync", e.syncAsync("g", old, r.Generation, map[string]string{old: "mine"}))
	e.waitState("g", "Stable")

	r2 := recv(t, "join after restart", e.joinAsync(join("")))
	wantCode(t, "join after restart", r2.ErrorCode, nil)
	if r2.MemberID == old || r2.Generation != r.Generation || r2.LeaderID != old || len(r2.Members) != 0 {
		t.Fatalf("rejoin: %+v (old id %s, generation %d)", r2, old, r.Generation)
	}
	if d := e.describe("g"); d.State != "Stable" {
		t.Fatalf("state %s after a static rejoin, want Stable (no rebalance)", d.State)
	}
	s := recv(t, "sync new id", e.syncAsync("g", r2.MemberID, r2.Generation, nil))
	if string(s.MemberAssignment) != "mine" {
		t.Fatalf("assignment after restart %q", s.MemberAssignment)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.SetVersion(3)
	hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = "g", old, r.Generation, &inst
	wantCode(t, "heartbeat of the old id", e.c.Heartbeat(hb).ErrorCode, kerr.FencedInstanceID)
	hb.MemberID = r2.MemberID
	wantCode(t, "heartbeat of the new id", e.c.Heartbeat(hb).ErrorCode, nil)
}

// TestProtocolSelection: the protocol all members support that most prefer is
// chosen; a member sharing no protocol, or of another protocol type, is refused.
func TestProtocolSelection(t *testing.T) {
	e := newEnv(t)
	m1, j1 := e.newMember("g", "range", "roundrobin")
	recv(t, "join m1", j1)
	recv(t, "sync m1", e.syncAsync("g", m1, 1, nil))
	wantCode(t, "no common protocol", recv(t, "join", e.joinAsync(joinReq(5, "g", "", "sticky"))).ErrorCode, kerr.InconsistentGroupProtocol)
	other := joinReq(5, "g", "", "range")
	other.ProtocolType = "connect"
	wantCode(t, "other protocol type", recv(t, "join", e.joinAsync(other)).ErrorCode, kerr.InconsistentGroupProtocol)
	m2, j2 := e.newMember("g", "roundrobin", "sticky")
	j1 = e.joinAsync(joinReq(5, "g", m1, "range", "roundrobin"))
	r1, r2 := recv(t, "join m1", j1), recv(t, "join m2", j2)
	if *r1.Protocol != "roundrobin" || *r2.Protocol != "roundrobin" {
		t.Fatalf("protocol %q/%q, want roundrobin, the only common one", *r1.Protocol, *r2.Protocol)
	}
	for _, m := range r1.Members {
		if string(m.ProtocolMetadata) != "meta-roundrobin" {
			t.Fatalf("leader got metadata %q of %s", m.ProtocolMetadata, m.MemberID)
		}
	}
	_ = m2
}

// TestBadInput: the errors Kafka answers malformed or stale requests with.
func TestBadInput(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxGroupSize = 2 })
	ctx := context.Background()
	empty := joinReq(5, "", "")
	wantCode(t, "JoinGroup with an empty group id", e.c.JoinGroup(ctx, client, empty).ErrorCode, kerr.InvalidGroupID)
	wantCode(t, "Heartbeat with an empty group id", e.heartbeat("", "m", 1), kerr.InvalidGroupID)
	wantCode(t, "SyncGroup with an empty group id", recv(t, "sync", e.syncAsync("", "m", 1, nil)).ErrorCode, kerr.InvalidGroupID)
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Group, lr.MemberID = "", "m"
	wantCode(t, "LeaveGroup with an empty group id", e.c.LeaveGroup(lr).ErrorCode, kerr.InvalidGroupID)
	noProto := joinReq(5, "g", "")
	noProto.Protocols = nil
	wantCode(t, "JoinGroup without protocols", e.c.JoinGroup(ctx, client, noProto).ErrorCode, kerr.InconsistentGroupProtocol)
	short := joinReq(5, "g", "")
	short.SessionTimeoutMillis = 1000
	wantCode(t, "session timeout below the minimum", e.c.JoinGroup(ctx, client, short).ErrorCode, kerr.InvalidSessionTimeout)
	wantCode(t, "JoinGroup with an unknown member id", e.c.JoinGroup(ctx, client, joinReq(5, "g", "ghost")).ErrorCode, kerr.UnknownMemberID)
	wantCode(t, "heartbeat to an unknown group", e.heartbeat("nope", "m", 1), kerr.UnknownMemberID)

	m1, j1 := e.newMember("g")
	recv(t, "join", j1)
	recv(t, "sync", e.syncAsync("g", m1, 1, nil))
	wantCode(t, "heartbeat of an unknown member", e.heartbeat("g", "ghost", 1), kerr.UnknownMemberID)
	wantCode(t, "heartbeat with an old generation", e.heartbeat("g", m1, 0), kerr.IllegalGeneration)
	wantCode(t, "sync with an old generation", recv(t, "sync", e.syncAsync("g", m1, 7, nil)).ErrorCode, kerr.IllegalGeneration)

	if c := e.commit(7, "g", m1, 5, "t", map[int32]int64{0: 1}); c[0] != kerr.IllegalGeneration.Code {
		t.Fatalf("commit with a wrong generation: %v", kerr.ErrorForCode(c[0]))
	}
	if c := e.commit(7, "g", "ghost", 1, "t", map[int32]int64{0: 1}); c[0] != kerr.UnknownMemberID.Code {
		t.Fatalf("commit of an unknown member: %v", kerr.ErrorForCode(c[0]))
	}
	if c := e.commit(7, "gone", "m", 3, "t", map[int32]int64{0: 1}); c[0] != kerr.IllegalGeneration.Code {
		t.Fatalf("commit to an unknown group with a generation: %v", kerr.ErrorForCode(c[0]))
	}
	if c := e.commit(7, "g", "", -1, "t", map[int32]int64{0: 1}); c[0] != kerr.UnknownMemberID.Code {
		t.Fatalf("simple commit to a group with members: %v", kerr.ErrorForCode(c[0]))
	}
	if c := e.commit(7, "g", m1, 1, "t", map[int32]int64{0: 1, 9: 1}); c[0] != 0 || c[9] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("commit of a partition that does not exist: %v", c)
	}

	// group.max.size counts members and handed-out member ids.
	e.newMember("g")
	wantCode(t, "join past group.max.size", e.c.JoinGroup(ctx, client, joinReq(5, "g", "")).ErrorCode, kerr.GroupMaxSizeReached)
}

// TestSimpleCommitFetch: offsets committed with generation -1 by a client outside
// group management, answered from Pebble, at every OffsetFetch version; metadata
// longer than offset.metadata.max.bytes is refused.
func TestSimpleCommitFetch(t *testing.T) {
	e := newEnv(t)
	for v := int16(0); v <= 7; v++ {
		if c := e.commit(v, "simple", "", -1, "t", map[int32]int64{0: int64(10 + v), 1: 20}); c[0] != 0 || c[1] != 0 {
			t.Fatalf("commit v%d: %v", v, c)
		}
	}
	if got := e.fetch("simple"); got["t/0"] != 17 || got["t/1"] != 20 || len(got) != 2 {
		t.Fatalf("fetch all: %v", got)
	}
	for v := int16(0); v <= 5; v++ {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.SetVersion(v)
		r.Group = "simple"
		r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0, 3}}, {Topic: "none", Partitions: []int32{0}}}
		resp := e.c.OffsetFetch(r)
		p := resp.Topics[0].Partitions
		if resp.ErrorCode != 0 || p[0].Offset != 17 || *p[0].Metadata != "md" || p[1].Offset != -1 || resp.Topics[1].Partitions[0].Offset != -1 {
			t.Fatalf("fetch v%d: %+v", v, resp)
		}
	}
	r := kmsg.NewPtrOffsetCommitRequest()
	r.SetVersion(7)
	r.Group = "simple"
	md := string(make([]byte, 4097))
	r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, Metadata: &md, LeaderEpoch: -1}}}}
	wantCode(t, "metadata too large", e.c.OffsetCommit(context.Background(), r).Topics[0].Partitions[0].ErrorCode, kerr.OffsetMetadataTooLarge)
	if got := e.listGroups(); len(got) != 1 || got[0] != "simple" {
		t.Fatalf("groups %v", got)
	}
}

// TestDeleteGroupsAndOffsets: DeleteGroups refuses a group with members and deletes
// an empty one with its offsets; OffsetDelete refuses partitions of topics an
// active consumer group subscribes to.
func TestDeleteGroupsAndOffsets(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.commit(7, "idle", "", -1, "t", map[int32]int64{0: 5, 1: 6})
	m1, j1 := e.newMember("busy")
	r := recv(t, "join", j1)
	recv(t, "sync", e.syncAsync("busy", m1, r.Generation, nil))
	e.commit(7, "busy", m1, r.Generation, "t", map[int32]int64{0: 1})
	e.commit(7, "busy", m1, r.Generation, "u", map[int32]int64{0: 1})

	dr := kmsg.NewPtrDeleteGroupsRequest()
	dr.SetVersion(1)
	dr.Groups = []string{"idle", "busy", "missing"}
	resp := e.c.DeleteGroups(ctx, dr)
	for i, want := range []*kerr.Error{nil, kerr.NonEmptyGroup, kerr.GroupIDNotFound} {
		wantCode(t, "delete "+resp.Groups[i].Group, resp.Groups[i].ErrorCode, want)
	}
	if got := e.fetch("idle"); len(got) != 0 {
		t.Fatalf("offsets of a deleted group: %v", got)
	}
	if got := e.listGroups(); len(got) != 1 || got[0] != "busy" {
		t.Fatalf("groups after delete: %v", got)
	}

	// The consumer's metadata says it subscribes to "t" (ConsumerMemberMetadata):
	// joinReq's metadata does not parse, so use a real subscription.
	sub := kmsg.ConsumerMemberMetadata{Version: 0, Topics: []string{"t"}}
	j := joinReq(5, "busy", m1)
	j.Protocols[0].Metadata = sub.AppendTo(nil)
	wantCode(t, "heartbeat", e.heartbeat("busy", m1, r.Generation), nil)
	r = recv(t, "rejoin with a subscription", e.joinAsync(j))
	recv(t, "sync", e.syncAsync("busy", m1, r.Generation, nil))
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "busy"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{
		{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
		{Topic: "u", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
	}
	or := e.c.OffsetDelete(ctx, od)
	wantCode(t, "offset delete", or.ErrorCode, nil)
	wantCode(t, "delete a subscribed topic's offset", or.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)
	wantCode(t, "delete another topic's offset", or.Topics[1].Partitions[0].ErrorCode, nil)
	if got := e.fetch("busy"); len(got) != 1 || got["t/0"] != 1 {
		t.Fatalf("offsets after OffsetDelete: %v", got)
	}
	od.Group = "missing"
	wantCode(t, "offset delete of an unknown group", e.c.OffsetDelete(ctx, od).ErrorCode, kerr.GroupIDNotFound)
}

// TestRebuildFromLog: Pebble is an index of the log. With the coordinator's Pebble
// lost, electing the partition again rebuilds every committed offset, deletion and
// group (generation, members, assignments) from __consumer_offsets.
func TestRebuildFromLog(t *testing.T) {
	e := newEnv(t)
	e.commit(7, "simple", "", -1, "t", map[int32]int64{0: 5, 1: 6})
	e.commit(7, "simple", "", -1, "t", map[int32]int64{0: 7})
	e.commit(7, "gone", "", -1, "u", map[int32]int64{1: 1})
	dr := kmsg.NewPtrDeleteGroupsRequest()
	dr.Groups = []string{"gone"}
	wantCode(t, "delete", e.c.DeleteGroups(context.Background(), dr).Groups[0].ErrorCode, nil)
	m1, j1 := e.newMember("members")
	r := recv(t, "join", j1)
	recv(t, "sync", e.syncAsync("members", m1, r.Generation, map[string]string{m1: "assigned"}))
	e.commit(7, "members", m1, r.Generation, "u", map[int32]int64{1: 99})

	for _, lose := range []bool{false, true} {
		e.stop()
		if lose {
			if err := removeAll(e.dir + "/meta"); err != nil {
				t.Fatal(err)
			}
		}
		e.start()
		if got := e.fetch("simple"); len(got) != 2 || got["t/0"] != 7 || got["t/1"] != 6 {
			t.Fatalf("lost Pebble %v: offsets of simple %v", lose, got)
		}
		if got := e.fetch("gone"); len(got) != 0 {
			t.Fatalf("lost Pebble %v: offsets of a deleted group came back: %v", lose, got)
		}
		if got := e.fetch("members"); got["u/1"] != 99 {
			t.Fatalf("lost Pebble %v: offsets of members %v", lose, got)
		}
		d := e.describe("members")
		if d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != m1 || string(d.Members[0].MemberAssignment) != "assigned" {
			t.Fatalf("lost Pebble %v: group not restored: %+v", lose, d)
		}
		// The restored member carries on in its generation.
		wantCode(t, "heartbeat after reload", e.heartbeat("members", m1, r.Generation), nil)
		if got := e.listGroups(); len(got) != 2 {
			t.Fatalf("lost Pebble %v: groups %v", lose, got)
		}
	}
}

// TestResign: a partition that is no longer led answers NOT_COORDINATOR, and held
// requests end with it.
func TestResign(t *testing.T) {
	e := newEnv(t)
	_, j1 := e.newMember("g")
	r := recv(t, "join", j1)
	_, j2 := e.newMember("g")
	e.c.Resign(0)
	wantCode(t, "held join after resign", recv(t, "join", j2).ErrorCode, kerr.NotCoordinator)
	wantCode(t, "heartbeat after resign", e.heartbeat("g", r.MemberID, r.Generation), kerr.NotCoordinator)
	if c := e.commit(7, "g", "", -1, "t", map[int32]int64{0: 1}); c[0] != kerr.NotCoordinator.Code {
		t.Fatalf("commit after resign: %v", kerr.ErrorForCode(c[0]))
	}
	e.c.Elect(0, e.log.epoch.Load(), e.log)
	waitFor(t, "re-election", func() bool { _, code := e.c.shardFor("g"); return code == 0 })
}

// TestExpiry: the offsets of an empty group are deleted offsets.retention after it
// became empty, with tombstones in the log (a rebuild does not bring them back);
// a group that only ever committed loses each offset once it is that old.
func TestExpiry(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.OffsetsRetention = time.Hour
		c.RetentionCheckInterval = time.Minute
	})
	e.commit(7, "simple", "", -1, "t", map[int32]int64{0: 1})
	e.clock.Advance(30 * time.Minute)
	e.commit(7, "simple", "", -1, "t", map[int32]int64{1: 1})
	m1, j1 := e.newMember("consumers")
	r := recv(t, "join", j1)
	recv(t, "sync", e.syncAsync("consumers", m1, r.Generation, nil))
	e.commit(7, "consumers", m1, r.Generation, "t", map[int32]int64{0: 3})
	e.clock.Advance(31 * time.Minute) // t/0 of simple is 61 minutes old
	waitFor(t, "the old offset to expire", func() bool { return len(e.fetch("simple")) == 1 })
	if got := e.fetch("consumers"); len(got) != 1 {
		t.Fatalf("offsets of a group with members expired: %v", got)
	}
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Group, lr.MemberID = "consumers", m1
	e.c.LeaveGroup(lr)
	e.waitState("consumers", "Empty")
	e.clock.Advance(61 * time.Minute)
	waitFor(t, "both groups and their offsets to expire", func() bool {
		return len(e.listGroups()) == 0 && len(e.fetch("simple")) == 0 && len(e.fetch("consumers")) == 0
	})
	e.stop()
	removeAll(e.dir + "/meta")
	e.start()
	if got := e.listGroups(); len(got) != 0 || len(e.fetch("simple")) != 0 {
		t.Fatalf("expired groups came back from the log: %v", got)
	}
}

// TestNoRewrite: __consumer_offsets is compacted, so the coordinator never
// writes a live commit or group again, however long it lives.
func TestNoRewrite(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.RetentionCheckInterval = time.Minute })
	e.commit(7, "g", "", -1, "t", map[int32]int64{0: 42})
	end := e.log.LogEndOffset()
	for range 30 {
		e.clock.Advance(24 * time.Hour / 10)
	}
	e.clock.Advance(time.Minute)
	if e.log.LogEndOffset() != end {
		t.Fatalf("the log grew from %d to %d: a live commit was written again", end, e.log.LogEndOffset())
	}
	if got := e.fetch("g"); got["t/0"] != 42 {
		t.Fatalf("offsets %v", got)
	}
}

// TestRequestBytesCopied: a request's bytes belong to the connection's buffer, which
// is reused for the next request; the member metadata and assignments a group keeps
// must not change when that buffer does.
func TestRequestBytesCopied(t *testing.T) {
	e := newEnv(t)
	req := joinReq(3, "g", "")
	r := e.c.JoinGroup(context.Background(), client, req)
	wantCode(t, "join", r.ErrorCode, nil)
	copy(req.Protocols[0].Metadata, "XXXXXXXXXX")
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.SetVersion(3)
	sync.Group, sync.MemberID, sync.Generation = "g", r.MemberID, r.Generation
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: r.MemberID, MemberAssignment: []byte("assignment")}}
	wantCode(t, "sync", e.c.SyncGroup(context.Background(), sync).ErrorCode, nil)
	copy(sync.GroupAssignment[0].MemberAssignment, "YYYYYYYYYY")
	m := e.describe("g").Members[0]
	if string(m.ProtocolMetadata) != "meta-range" || string(m.MemberAssignment) != "assignment" {
		t.Fatalf("kept metadata %q and assignment %q changed with the request's buffer", m.ProtocolMetadata, m.MemberAssignment)
	}
}

// TestElectWaitsForHighWatermark: a new leader's log may hold commits of the previous
// leader above its high watermark (its followers have not fetched them yet); the
// partition is served only once they are committed, so none is missing.
func TestElectWaitsForHighWatermark(t *testing.T) {
	e := newEnv(t)
	e.commit(7, "g", "", -1, "t", map[int32]int64{0: 1})
	mid := e.log.LogEndOffset()
	e.commit(7, "g", "", -1, "t", map[int32]int64{0: 2})
	e.stop()
	removeAll(e.dir + "/meta") // the new leader has applied nothing
	e.log.setHWCap(mid)

	var err error
	if e.db, err = offsets.Open(filepath.Join(e.dir, "meta"), offsets.Options{}); err != nil {
		t.Fatal(err)
	}
	cfg := e.cfg
	cfg.DB = e.db
	e.c = New(cfg)
	e.c.SetOffsetsTopic(1)
	e.log.epoch.Store(1) // a new leadership
	e.c.Elect(0, 1, e.log)
	waitFor(t, "the shard to apply what is committed", func() bool {
		a, _ := e.db.GroupShard(0).Applied()
		return a == mid
	})
	if _, code := e.c.shardFor("g"); code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("served at high watermark %d of log end %d: %v", mid, e.log.LogEndOffset(), kerr.ErrorForCode(code))
	}
	e.log.setHWCap(-1)
	waitFor(t, "the shard to load", func() bool { _, code := e.c.shardFor("g"); return code == 0 })
	if got := e.fetch("g"); got["t/0"] != 2 {
		t.Fatalf("offsets after the election: %v", got)
	}
}

// gatedLog is a testLog whose AddWaiter, the first thing a shard's loader does,
// blocks until open is closed: the load cannot progress meanwhile.
type gatedLog struct {
	*testLog
	open chan struct{}
}

func (l *gatedLog) AddWaiter(ch chan<- struct{}) {
	<-l.open
	l.testLog.AddWaiter(ch)
}

// TestElectEmptyPartitionServesAtOnce: a just-created __consumer_offsets
// partition (empty log, nothing applied) has nothing to load and is served from
// Elect on, so the first group requests of a new cluster do not get
// COORDINATOR_LOAD_IN_PROGRESS; a partition with records is still not served
// before its load, and the empty one's load, when it runs, keeps what was
// written meanwhile.
func TestElectEmptyPartitionServesAtOnce(t *testing.T) {
	e := newEnv(t)
	e.c.Resign(0)
	gl := &gatedLog{testLog: e.log, open: make(chan struct{})}
	e.c.Elect(0, e.log.epoch.Load(), gl)
	if _, code := e.c.shardFor("g"); code != 0 {
		close(gl.open)
		t.Fatalf("empty partition right after Elect: %v, want it served", kerr.ErrorForCode(code))
	}
	// A commit written before the loader runs is applied and stays.
	done := make(chan map[int32]int16, 1)
	go func() { done <- e.commit(7, "g", "", -1, "t", map[int32]int64{0: 5}) }()
	close(gl.open)
	if c := <-done; c[0] != 0 {
		t.Fatalf("commit on the empty partition: %v", kerr.ErrorForCode(c[0]))
	}
	if got := e.fetch("g"); got["t/0"] != 5 {
		t.Fatalf("offsets: %v", got)
	}

	// Now the partition has a record: a new election loads it before serving.
	e.c.Resign(0)
	gl = &gatedLog{testLog: e.log, open: make(chan struct{})}
	e.c.Elect(0, e.log.epoch.Load(), gl)
	_, code := e.c.shardFor("g")
	close(gl.open)
	if code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("partition with records before its load: %v, want COORDINATOR_LOAD_IN_PROGRESS", kerr.ErrorForCode(code))
	}
	waitFor(t, "the shard to load", func() bool { _, code := e.c.shardFor("g"); return code == 0 })
	if got := e.fetch("g"); got["t/0"] != 5 {
		t.Fatalf("offsets after the reload: %v", got)
	}
}
