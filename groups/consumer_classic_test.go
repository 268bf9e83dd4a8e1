package groups

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicJoinReq is a JoinGroup of a cooperative-sticky member subscribed to
// topics, owning owned (topic -> partitions).
func classicJoinReq(group, member string, owned map[string][]int32, topics ...string) *kmsg.JoinGroupRequest {
	sub := kmsg.NewConsumerMemberMetadata()
	sub.Version, sub.Topics = 3, topics
	for t, ps := range owned {
		sub.OwnedPartitions = append(sub.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: t, Partitions: ps})
	}
	r := joinReq(5, group, member)
	r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "cooperative-sticky", Metadata: sub.AppendTo(nil)}}
	return r
}

// classicSync returns the partitions SyncGroup assigns a classic member.
func (e *env) classicSync(group, member string, gen int32) (map[string][]int32, int16) {
	r := kmsg.NewPtrSyncGroupRequest()
	r.SetVersion(5)
	r.Group, r.MemberID, r.Generation = group, member, gen
	r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("cooperative-sticky")
	resp := e.c.SyncGroup(context.Background(), r)
	if resp.ErrorCode != 0 {
		return nil, resp.ErrorCode
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(resp.MemberAssignment); err != nil {
		e.t.Fatalf("assignment of %s: %v", member, err)
	}
	out := map[string][]int32{}
	for _, t := range a.Topics {
		out[t.Topic] = t.Partitions
	}
	return out, 0
}

// A classic member in a consumer group: it joins (served by the consumer group,
// with no leader), gets only partitions no one else owns, is told to rejoin when
// the partitions it waits for are free, commits with its generation, survives a
// reload; when the last consumer-protocol member leaves, the group turns classic.
func TestConsumerClassicMember(t *testing.T) {
	e := newConsumerEnv(t)
	m1 := e.cgJoin("g", "m1", "t")
	if len(m1.owned) != 4 {
		t.Fatalf("m1 owns %d", len(m1.owned))
	}
	r := e.c.JoinGroup(context.Background(), client, classicJoinReq("g", "", nil, "t"))
	wantCode(t, "first classic join", r.ErrorCode, kerr.MemberIDRequired)
	c := r.MemberID
	r = e.c.JoinGroup(context.Background(), client, classicJoinReq("g", c, nil, "t"))
	wantCode(t, "classic join", r.ErrorCode, nil)
	if r.LeaderID != "" || *r.Protocol != "cooperative-sticky" || len(r.Members) != 0 || r.Generation != 2 {
		t.Fatalf("join answer: leader %q, protocol %q, %d members, generation %d", r.LeaderID, *r.Protocol, len(r.Members), r.Generation)
	}
	gen := r.Generation
	if got, code := e.classicSync("g", c, gen); code != 0 || len(got["t"]) != 0 {
		t.Fatalf("sync while m1 owns everything: %v, %v", got, kerr.ErrorForCode(code))
	}
	wantCode(t, "heartbeat while waiting", e.heartbeat("g", c, gen), nil)
	e.cgBeat("g", m1) // revoke two
	e.cgBeat("g", m1) // revoked
	if len(m1.owned) != 2 {
		t.Fatalf("m1 owns %d after revoking", len(m1.owned))
	}
	wantCode(t, "heartbeat once the partitions are free", e.heartbeat("g", c, gen), kerr.RebalanceInProgress)
	r = e.c.JoinGroup(context.Background(), client, classicJoinReq("g", c, nil, "t"))
	wantCode(t, "classic rejoin", r.ErrorCode, nil)
	got, code := e.classicSync("g", c, r.Generation)
	wantCode(t, "sync", code, nil)
	if len(got["t"]) != 2 {
		t.Fatalf("classic member assigned %v", got)
	}
	for _, p := range got["t"] {
		if _, ok := m1.owned[topicPart{topicID("t"), p}]; ok {
			t.Fatalf("partition %d owned by both", p)
		}
	}
	wantCode(t, "heartbeat when stable", e.heartbeat("g", c, gen), nil)
	dr := kmsg.NewPtrConsumerGroupDescribeRequest()
	dr.SetVersion(1)
	dr.Groups = []string{"g"}
	for _, dm := range e.c.ConsumerGroupDescribe(dr).Groups[0].Members {
		if want := map[string]int8{c: 0, "m1": 1}[dm.MemberID]; dm.MemberType != want {
			t.Fatalf("member %s described as type %d, want %d", dm.MemberID, dm.MemberType, want)
		}
	}
	p := got["t"][0]
	wantCode(t, "classic commit at v7", e.commit(7, "g", c, gen, "t", map[int32]int64{p: 3})[p], nil)
	wantCode(t, "classic commit, wrong generation", e.commit(7, "g", c, gen+1, "t", map[int32]int64{p: 3})[p], kerr.IllegalGeneration)

	e.stop()
	e.start()
	wantCode(t, "heartbeat after a reload", e.heartbeat("g", c, gen), nil)
	if again, code := e.classicSync("g", c, gen); code != 0 || len(again["t"]) != 2 {
		t.Fatalf("sync after a reload: %v, %v", again, kerr.ErrorForCode(code))
	}
	e.cgBeat("g", m1)

	wantCode(t, "m1 leaves", e.cgHeartbeat("g", m1, -1, nil, nil).ErrorCode, nil)
	d := e.describe("g")
	if d.ErrorCode != 0 || d.ProtocolType != "consumer" || len(d.Members) != 1 || d.Members[0].MemberID != c {
		t.Fatalf("after the last consumer-protocol member left: %+v", d)
	}
	if code := e.heartbeat("g", c, gen); code != kerr.RebalanceInProgress.Code && code != kerr.IllegalGeneration.Code {
		t.Fatalf("heartbeat of the classic member after the downgrade: %v", kerr.ErrorForCode(code))
	}
	r = recv(t, "rejoin the classic group", e.joinAsync(classicJoinReq("g", c, got, "t")))
	wantCode(t, "rejoin the classic group", r.ErrorCode, nil)
	if r.LeaderID != c {
		t.Fatalf("leader %q after the downgrade", r.LeaderID)
	}
}

// A consumer-protocol member joining a classic group with members upgrades it
// (group.consumer.migration.policy allowing); the classic members keep their
// partitions until they join again, now served by the consumer group.
func TestConsumerClassicUpgrade(t *testing.T) {
	e := newConsumerEnv(t)
	c, ch := e.newMember("g", "range")
	jr := recv(t, "classic join", ch)
	own := kmsg.NewConsumerMemberAssignment()
	own.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: []int32{0, 1, 2, 3}}}
	sub := kmsg.NewConsumerMemberMetadata()
	sub.Topics = []string{"t"}
	sr := recv(t, "classic sync", e.syncAsync("g", c, jr.Generation, map[string]string{c: string(own.AppendTo(nil))}))
	wantCode(t, "classic sync", sr.ErrorCode, nil)
	// joinReq's metadata is not a subscription: the upgrade is refused.
	wantCode(t, "upgrade of a group whose members' metadata does not parse", e.cgHeartbeat("g", &cgm{id: "x"}, 0, []string{"t"}, nil).ErrorCode, kerr.GroupIDNotFound)

	e2 := newConsumerEnv(t)
	r := e2.c.JoinGroup(context.Background(), client, classicJoinReq("h", "", nil, "t"))
	c = r.MemberID
	jr = recv(t, "classic join", e2.joinAsync(classicJoinReq("h", c, nil, "t")))
	wantCode(t, "classic join", jr.ErrorCode, nil)
	sr = recv(t, "classic sync", e2.syncAsync("h", c, jr.Generation, map[string]string{c: string(own.AppendTo(nil))}))
	wantCode(t, "classic sync", sr.ErrorCode, nil)
	m := e2.cgJoin("h", "m", "t")
	if len(m.owned) != 0 {
		t.Fatalf("the new member owns %d while the classic member holds everything", len(m.owned))
	}
	wantCode(t, "classic heartbeat after the upgrade", e2.heartbeat("h", c, jr.Generation), kerr.RebalanceInProgress)
	r = e2.c.JoinGroup(context.Background(), client, classicJoinReq("h", c, map[string][]int32{"t": {0, 1, 2, 3}}, "t"))
	wantCode(t, "classic rejoin", r.ErrorCode, nil)
	got, code := e2.classicSync("h", c, r.Generation)
	wantCode(t, "sync", code, nil)
	if len(got["t"]) != 2 || r.LeaderID != "" {
		t.Fatalf("after the upgrade the classic member keeps %v (leader %q)", got, r.LeaderID)
	}
	r = e2.c.JoinGroup(context.Background(), client, classicJoinReq("h", c, got, "t")) // revoked the others
	wantCode(t, "classic rejoin after revoking", r.ErrorCode, nil)
	e2.cgBeat("h", m)
	if len(m.owned) != 2 {
		t.Fatalf("the new member owns %d once the classic member revoked", len(m.owned))
	}
}

// With group.consumer.migration.policy=disabled a classic group with members
// refuses consumer-protocol members (GROUP_ID_NOT_FOUND), as Kafka does.
func TestConsumerMigrationDisabled(t *testing.T) {
	e := newConsumerEnv(t, func(c *Config) { c.ConsumerMigrationPolicy = MigrationDisabled })
	r := e.c.JoinGroup(context.Background(), client, classicJoinReq("g", "", nil, "t"))
	jr := recv(t, "classic join", e.joinAsync(classicJoinReq("g", r.MemberID, nil, "t")))
	wantCode(t, "classic join", jr.ErrorCode, nil)
	wantCode(t, "consumer member in a classic group", e.cgHeartbeat("g", &cgm{id: "x"}, 0, []string{"t"}, nil).ErrorCode, kerr.GroupIDNotFound)

	// An empty group changes kind whatever the policy.
	m := e.cgJoin("cg", "m", "t")
	wantCode(t, "leave", e.cgHeartbeat("cg", m, -1, nil, nil).ErrorCode, nil)
	r = e.c.JoinGroup(context.Background(), client, joinReq(5, "cg", "", "range"))
	wantCode(t, "classic member in an empty consumer group", r.ErrorCode, kerr.MemberIDRequired)
}

// A static classic member joining again under a new member id replaces its old
// member (which is fenced) and keeps its partitions, whether or not it left; a
// consumer-protocol static member replaces a classic one the same way.
func TestConsumerClassicStaticRejoin(t *testing.T) {
	e := newConsumerEnv(t)
	m1 := e.cgJoin("g", "m1", "t")
	inst := "inst-1"
	join := func(member string) *kmsg.JoinGroupResponse {
		r := classicJoinReq("g", member, nil, "t")
		r.InstanceID = &inst
		return e.c.JoinGroup(context.Background(), client, r)
	}
	r := join("")
	wantCode(t, "static classic join", r.ErrorCode, nil)
	old, gen := r.MemberID, r.Generation
	e.cgBeat("g", m1)
	e.cgBeat("g", m1) // revoked two
	wantCode(t, "heartbeat", e.heartbeat("g", old, gen), kerr.RebalanceInProgress)
	r = join(old)
	wantCode(t, "rejoin", r.ErrorCode, nil)
	got, code := e.classicSync("g", old, r.Generation)
	if code != 0 || len(got["t"]) != 2 {
		t.Fatalf("static member assigned %v, %v", got, kerr.ErrorForCode(code))
	}
	gen = r.Generation

	r = join("") // restarted: a new member id, the old one never left
	wantCode(t, "static classic rejoin under a new member id", r.ErrorCode, nil)
	if r.MemberID == old || r.Generation != gen {
		t.Fatalf("rejoin: member %s (old %s), generation %d (was %d)", r.MemberID, old, r.Generation, gen)
	}
	again, code := e.classicSync("g", r.MemberID, r.Generation)
	if code != 0 || fmt.Sprint(again) != fmt.Sprint(got) {
		t.Fatalf("after rejoining: %v, %v; had %v", again, kerr.ErrorForCode(code), got)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = "g", old, gen, &inst
	wantCode(t, "heartbeat of the replaced member", e.c.Heartbeat(hb).ErrorCode, kerr.FencedInstanceID)

	modern := &cgm{id: "m2", owned: partSet{}, instance: &inst}
	wantCode(t, "consumer-protocol member replacing the classic one", e.cgHeartbeat("g", modern, 0, []string{"t"}, nil).ErrorCode, nil)
	hb.MemberID = r.MemberID
	wantCode(t, "heartbeat of the replaced classic member", e.c.Heartbeat(hb).ErrorCode, kerr.FencedInstanceID)
}

// A static classic member replacing the group's last consumer-protocol member
// turns the group classic (Kafka's validateOnlineDowngradeWithReplacedMemberId),
// keeping its assignment until the rebalance; with another consumer-protocol
// member left, or a policy without downgrades, the group stays a consumer group.
func TestConsumerClassicStaticReplacementDowngrades(t *testing.T) {
	for _, tc := range []struct {
		name      string
		policy    string
		others    bool // a dynamic consumer-protocol member stays
		downgrade bool
	}{
		{"last", MigrationBidirectional, false, true},
		{"another remains", MigrationBidirectional, true, false},
		{"policy upgrade only", MigrationUpgrade, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newConsumerEnv(t, func(c *Config) { c.ConsumerMigrationPolicy = tc.policy })
			m1 := &cgm{id: "m1", instance: kmsg.StringPtr("i1"), owned: partSet{}}
			e.cgBeat("g", m1, "t")
			if tc.others {
				m2 := e.cgJoin("g", "m2", "t")
				e.cgBeat("g", m1)
				e.cgBeat("g", m2)
			}
			req := classicJoinReq("g", "", nil, "t")
			req.InstanceID = kmsg.StringPtr("i1")
			r := e.c.JoinGroup(context.Background(), client, req)
			wantCode(t, "static classic join", r.ErrorCode, nil)
			c := r.MemberID
			d := e.describe("g")
			if !tc.downgrade {
				wantCode(t, "describe as a classic group", d.ErrorCode, kerr.GroupIDNotFound)
				if got := e.describeConsumer("g"); !strings.Contains(got, c) || strings.Contains(got, "m1 ") {
					t.Fatalf("consumer group after the replacement:\n%s", got)
				}
				return
			}
			if d.ErrorCode != 0 || d.State != "PreparingRebalance" || len(d.Members) != 1 || d.Members[0].MemberID != c {
				t.Fatalf("group after the last consumer-protocol member was replaced: %+v", d)
			}
			cd := e.c.ConsumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Groups: []string{"g"}}).Groups[0]
			wantCode(t, "describe as a consumer group", cd.ErrorCode, kerr.GroupIDNotFound)
			rj := classicJoinReq("g", c, nil, "t")
			rj.InstanceID = kmsg.StringPtr("i1")
			r = recv(t, "rejoin the classic group", e.joinAsync(rj))
			wantCode(t, "rejoin the classic group", r.ErrorCode, nil)
			if r.LeaderID != c || len(r.Members) != 1 {
				t.Fatalf("classic rebalance after the downgrade: leader %q, %d members", r.LeaderID, len(r.Members))
			}
		})
	}
}

// A classic member of a consumer group must sync within its rebalance timeout
// after joining, and join again within it once told to (Kafka's sync and join
// timeouts): heartbeats alone do not keep such a member, which is fenced.
func TestConsumerClassicJoinSyncTimeouts(t *testing.T) {
	e := newConsumerEnv(t)
	m1 := e.cgJoin("g", "m1", "t")
	join := func() *kmsg.JoinGroupResponse {
		r := e.c.JoinGroup(context.Background(), client, classicJoinReq("g", "", nil, "t"))
		wantCode(t, "first classic join", r.ErrorCode, kerr.MemberIDRequired)
		r = e.c.JoinGroup(context.Background(), client, classicJoinReq("g", r.MemberID, nil, "t"))
		wantCode(t, "classic join", r.ErrorCode, nil)
		return r
	}
	// beatFor heartbeats every 3 s (session 6 s) for d; it returns the last code.
	beatFor := func(member string, gen int32, d time.Duration) int16 {
		var code int16
		for step := 3 * time.Second; d > 0; d -= step {
			e.clock.Advance(step)
			if code = e.heartbeat("g", member, gen); code == kerr.UnknownMemberID.Code {
				return code
			}
		}
		return code
	}

	// Joined, never synced: fenced after the rebalance timeout (10 s).
	lazy := join()
	code := beatFor(lazy.MemberID, lazy.Generation, 15*time.Second)
	wantCode(t, "heartbeat of a member that never synced", code, kerr.UnknownMemberID)

	// Synced, and joining again whenever told to: kept.
	c := join()
	rejoins := 0
	for range 5 {
		if _, code := e.classicSync("g", c.MemberID, c.Generation); code != 0 {
			t.Fatalf("sync: %v", kerr.ErrorForCode(code))
		}
		e.cgBeat("g", m1) // revokes what the classic member waits for
		e.clock.Advance(3 * time.Second)
		switch code := e.heartbeat("g", c.MemberID, c.Generation); code {
		case kerr.RebalanceInProgress.Code:
			r := e.c.JoinGroup(context.Background(), client, classicJoinReq("g", c.MemberID, nil, "t"))
			wantCode(t, "classic rejoin", r.ErrorCode, nil)
			c, rejoins = r, rejoins+1
		case 0:
		default:
			t.Fatalf("heartbeat of a member that syncs and rejoins: %v", kerr.ErrorForCode(code))
		}
	}
	if rejoins == 0 {
		t.Fatal("the classic member was never told to join again")
	}

	// Told to join again (a new member bumps the group epoch), it only heartbeats:
	// fenced after the rebalance timeout.
	e.cgJoin("g", "m2", "t")
	wantCode(t, "heartbeat after the epoch moved", e.heartbeat("g", c.MemberID, c.Generation), kerr.RebalanceInProgress)
	code = beatFor(c.MemberID, c.Generation, 15*time.Second)
	wantCode(t, "heartbeat of a member that never joined again", code, kerr.UnknownMemberID)
}
