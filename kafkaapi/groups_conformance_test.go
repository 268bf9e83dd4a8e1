package kafkaapi_test

// Conformance tests of the group coordinator's keys (8..16, 42, 47) at every
// advertised version, against the shared node: each request is built with kmsg at
// the version under test and its answer parsed at that version (kconn), and the
// answer's meaning is checked. The group semantics themselves are tested in
// package groups; these tests check the wire.

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/cluster"
)

func init() {
	for key, f := range map[int16]conformance{
		8: conformOffsetCommit, 9: conformOffsetFetch, 10: conformFindCoordinator,
		11: conformJoinGroup, 12: conformHeartbeat, 13: conformLeaveGroup, 14: conformSyncGroup,
		15: conformDescribeGroups, 16: conformListGroups, 42: conformDeleteGroups, 47: conformOffsetDelete,
	} {
		conformanceTests[key] = f
	}
}

// groupSession and groupRebalance are the timeouts of the test members: long
// enough to outlive the rest of the suite between two uses of the fixture.
const (
	groupSession   = 10 * 60 * 1000
	groupRebalance = 60 * 1000
)

// coordinatorFor asks FindCoordinator v0 for group (creating __consumer_offsets on
// first use) until the group's partition is served, and checks the answer is this node.
func coordinatorFor(t *testing.T, c *kconn, group string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(0)
		req.CoordinatorKey = group
		resp := c.do(req).(*kmsg.FindCoordinatorResponse)
		if resp.ErrorCode == 0 {
			of := kmsg.NewPtrOffsetFetchRequest()
			of.SetVersion(5)
			of.Group = group
			if code := c.do(of).(*kmsg.OffsetFetchResponse).ErrorCode; code == 0 {
				return
			} else if code != kerr.CoordinatorLoadInProgress.Code && code != kerr.NotCoordinator.Code {
				t.Fatalf("OffsetFetch of %s: %s", group, errName(code))
			}
		} else if resp.ErrorCode != kerr.CoordinatorNotAvailable.Code {
			t.Fatalf("FindCoordinator %s: %s", group, errName(resp.ErrorCode))
		}
		if time.Now().After(deadline) {
			t.Fatalf("the coordinator of %s is not served within 30 s", group)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

func groupJoinRequest(version int16, group, member string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = groupSession, groupRebalance
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("subscription")}}
	return req
}

func groupSyncRequest(version int16, group, member string, gen int32, assignment string) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.Generation = group, member, gen
	if assignment != "" {
		req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: member, MemberAssignment: []byte(assignment)}}
	}
	return req
}

// fixture is one consumer group with one member, shared by the tests of the keys
// that need a member: creating it waits out group.initial.rebalance.delay.ms once.
var fixture struct {
	once          sync.Once
	group, member string
}

// groupFixture returns the fixture group and its member, and leaves the group
// Stable in a new generation, which it returns (a rejoin of the sole member, the
// leader, rebalances at once).
func groupFixture(t *testing.T, c *kconn) (group, member string, gen int32) {
	t.Helper()
	fixture.once.Do(func() {
		fixture.group = topicName(t, "fixture")
		coordinatorFor(t, c, fixture.group)
		resp := c.do(groupJoinRequest(5, fixture.group, "")).(*kmsg.JoinGroupResponse)
		wantCode(t, "first join", resp.ErrorCode, kerr.MemberIDRequired.Code)
		fixture.member = resp.MemberID
	})
	if fixture.member == "" {
		t.Fatal("the fixture group could not be created")
	}
	resp := c.do(groupJoinRequest(5, fixture.group, fixture.member)).(*kmsg.JoinGroupResponse)
	wantCode(t, "fixture join", resp.ErrorCode, 0)
	sync := c.do(groupSyncRequest(3, fixture.group, fixture.member, resp.Generation, "fixture-assignment")).(*kmsg.SyncGroupResponse)
	wantCode(t, "fixture sync", sync.ErrorCode, 0)
	return fixture.group, fixture.member, resp.Generation
}

func commitRequest(version int16, group, member string, gen int32, topic string, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.Generation = group, member, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.Metadata, rp.LeaderEpoch = 0, offset, kmsg.StringPtr("md-"+strconv.Itoa(int(version))), 3
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func commitCode(t *testing.T, c *kconn, req *kmsg.OffsetCommitRequest) int16 {
	t.Helper()
	resp := c.do(req).(*kmsg.OffsetCommitResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Topic != req.Topics[0].Topic {
		t.Fatalf("commit answer %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// fetchOffset returns the committed offset of partition 0 of topic (OffsetFetch v5).
func fetchOffset(t *testing.T, c *kconn, group, topic string) kmsg.OffsetFetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(5)
	req.Group = group
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0}}}
	resp := c.do(req).(*kmsg.OffsetFetchResponse)
	wantCode(t, "offset fetch", resp.ErrorCode, 0)
	return resp.Topics[0].Partitions[0]
}

func conformOffsetCommit(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	group, member, gen := groupFixture(t, c)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			simple := topicName(t, "simple")
			coordinatorFor(t, c, simple)
			wantCode(t, "simple commit", commitCode(t, c, commitRequest(v, simple, "", -1, topic, 100+int64(v))), 0)
			got := fetchOffset(t, c, simple, topic)
			wantEpoch := int32(-1)
			if v >= 6 {
				wantEpoch = 3
			}
			if got.Offset != 100+int64(v) || *got.Metadata != "md-"+strconv.Itoa(int(v)) || got.LeaderEpoch != wantEpoch {
				t.Fatalf("fetched %+v after a simple commit at v%d", got, v)
			}
			wantCode(t, "unknown topic", commitCode(t, c, commitRequest(v, simple, "", -1, "no-such-topic-"+simple, 1)), kerr.UnknownTopicOrPartition.Code)
			if v == 0 {
				return // v0 has no generation or member id
			}
			wantCode(t, "member commit", commitCode(t, c, commitRequest(v, group, member, gen, topic, 7)), 0)
			if got := fetchOffset(t, c, group, topic); got.Offset != 7 {
				t.Fatalf("member commit: fetched %d", got.Offset)
			}
			wantCode(t, "unknown generation", commitCode(t, c, commitRequest(v, group, member, gen+5, topic, 8)), kerr.IllegalGeneration.Code)
			wantCode(t, "unknown member", commitCode(t, c, commitRequest(v, group, "nobody", gen, topic, 8)), kerr.UnknownMemberID.Code)
			gone := kerr.IllegalGeneration.Code
			if v >= 9 {
				gone = kerr.GroupIDNotFound.Code
			}
			wantCode(t, "generation of a group that does not exist", commitCode(t, c, commitRequest(v, simple+"-gone", "m", 4, topic, 8)), gone)
			conformConsumerMemberCommit(t, c, v, topic)
		})
	}
}

// conformConsumerMemberCommit commits as a member of a KIP-848 consumer group:
// its member epoch is the generation, from v9 only.
func conformConsumerMemberCommit(t *testing.T, c *kconn, v int16, topic string) {
	group := topicName(t, "cg")
	coordinatorFor(t, c, group)
	hb := cgJoin(c, 1, group, "m-"+group, topic)
	wantCode(t, "consumer group join", hb.ErrorCode, 0)
	member, epoch := "m-"+group, hb.MemberEpoch
	defer func() { wantCode(t, "leave", cgBeat(c, 1, group, member, -1, nil).ErrorCode, 0) }()
	if v < 9 {
		wantCode(t, "consumer member commit before v9", commitCode(t, c, commitRequest(v, group, member, epoch, topic, 9)), kerr.UnsupportedVersion.Code)
		return
	}
	wantCode(t, "consumer member commit", commitCode(t, c, commitRequest(v, group, member, epoch, topic, 9)), 0)
	if got := fetchOffset(t, c, group, topic); got.Offset != 9 {
		t.Fatalf("consumer member commit: fetched %d", got.Offset)
	}
	wantCode(t, "newer member epoch", commitCode(t, c, commitRequest(v, group, member, epoch+1, topic, 10)), kerr.StaleMemberEpoch.Code)
	wantCode(t, "unknown consumer member", commitCode(t, c, commitRequest(v, group, "nobody", epoch, topic, 10)), kerr.UnknownMemberID.Code)
}

func conformOffsetFetch(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 2, nil)
	group := topicName(t, "group")
	coordinatorFor(t, c, group)
	wantCode(t, "commit", commitCode(t, c, commitRequest(7, group, "", -1, topic, 42)), 0)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			if v >= 8 {
				conformOffsetFetchGroups(t, c, v, group, topic)
				return
			}
			req := kmsg.NewPtrOffsetFetchRequest()
			req.SetVersion(v)
			req.Group = group
			req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0, 1}}}
			resp := c.do(req).(*kmsg.OffsetFetchResponse)
			wantCode(t, "fetch", resp.ErrorCode, 0)
			ps := resp.Topics[0].Partitions
			if len(ps) != 2 || ps[0].Offset != 42 || ps[1].Offset != -1 || ps[0].ErrorCode != 0 || ps[1].ErrorCode != 0 {
				t.Fatalf("fetched %+v", ps)
			}
			if v >= 5 && ps[0].LeaderEpoch != 3 {
				t.Fatalf("leader epoch %d, want 3", ps[0].LeaderEpoch)
			}
			if v >= 2 {
				req.Topics = nil // every committed offset of the group
				resp = c.do(req).(*kmsg.OffsetFetchResponse)
				if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Offset != 42 {
					t.Fatalf("fetch all: %+v", resp.Topics)
				}
			}
		})
	}
}

// conformOffsetFetchGroups fetches several groups in one request (v8+): group
// (offset 42 committed on partition 0 of topic), every offset of group, and a
// group without commits; at v9 also a KIP-848 member's fetch, checked against its
// member epoch.
func conformOffsetFetchGroups(t *testing.T, c *kconn, v int16, group, topic string) {
	empty := topicName(t, "empty")
	coordinatorFor(t, c, empty)
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(v)
	named := kmsg.NewOffsetFetchRequestGroup()
	named.Group = group
	named.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{0, 1}}}
	all := kmsg.NewOffsetFetchRequestGroup()
	all.Group = group // Topics nil: every committed offset
	none := kmsg.NewOffsetFetchRequestGroup()
	none.Group = empty
	none.Topics = named.Topics
	req.Groups = []kmsg.OffsetFetchRequestGroup{named, all, none}
	resp := c.do(req).(*kmsg.OffsetFetchResponse)
	if len(resp.Groups) != 3 {
		t.Fatalf("%d groups answered, want 3", len(resp.Groups))
	}
	for i, g := range resp.Groups {
		wantCode(t, "group "+g.Group, g.ErrorCode, 0)
		if g.Group != req.Groups[i].Group {
			t.Fatalf("group %d answered as %s, want %s", i, g.Group, req.Groups[i].Group)
		}
	}
	if ps := resp.Groups[0].Topics[0].Partitions; len(ps) != 2 || ps[0].Offset != 42 || ps[0].LeaderEpoch != 3 || ps[1].Offset != -1 {
		t.Fatalf("named partitions: %+v", ps)
	}
	if ts := resp.Groups[1].Topics; len(ts) != 1 || len(ts[0].Partitions) != 1 || ts[0].Partitions[0].Offset != 42 {
		t.Fatalf("every offset: %+v", ts)
	}
	if ps := resp.Groups[2].Topics[0].Partitions; len(ps) != 2 || ps[0].Offset != -1 || ps[1].Offset != -1 {
		t.Fatalf("group without commits: %+v", ps)
	}
	if v < 9 {
		return
	}
	cg := topicName(t, "cg")
	coordinatorFor(t, c, cg)
	member := "m-" + cg
	hb := cgJoin(c, 1, cg, member, topic)
	wantCode(t, "consumer group join", hb.ErrorCode, 0)
	defer func() { wantCode(t, "leave", cgBeat(c, 1, cg, member, -1, nil).ErrorCode, 0) }()
	fetch := func(member *string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(v)
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.MemberID, g.MemberEpoch = cg, member, epoch
		g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}
		req.Groups = []kmsg.OffsetFetchRequestGroup{g}
		return c.do(req).(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode
	}
	wantCode(t, "member at its epoch", fetch(&member, hb.MemberEpoch), 0)
	wantCode(t, "member at another epoch", fetch(&member, hb.MemberEpoch+1), kerr.StaleMemberEpoch.Code)
	wantCode(t, "unknown member", fetch(kmsg.StringPtr("nobody"), hb.MemberEpoch), kerr.UnknownMemberID.Code)
	wantCode(t, "no member", fetch(nil, -1), 0)
}

func conformFindCoordinator(t *testing.T, c *kconn, versions []int16) {
	n := sharedNode(t)
	// find asks at version v for key of keyType, until the coordinator is named
	// (the first lookup of a type creates its topic), and returns the answer's
	// code, message and node: the top-level fields before v4, the key's entry from.
	find := func(t *testing.T, v int16, keyType int8, key string) (int16, string, int32, string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.SetVersion(v)
			req.CoordinatorType = keyType
			if v >= 4 {
				req.CoordinatorKeys = []string{key}
			} else {
				req.CoordinatorKey = key
			}
			resp := c.do(req).(*kmsg.FindCoordinatorResponse)
			code, msg, node, addr := resp.ErrorCode, resp.ErrorMessage, resp.NodeID, fmt.Sprintf("%s:%d", resp.Host, resp.Port)
			if v >= 4 {
				if len(resp.Coordinators) != 1 || resp.Coordinators[0].Key != key {
					t.Fatalf("v%d: coordinators %+v, want one for %q", v, resp.Coordinators, key)
				}
				co := resp.Coordinators[0]
				code, msg, node, addr = co.ErrorCode, co.ErrorMessage, co.NodeID, fmt.Sprintf("%s:%d", co.Host, co.Port)
			}
			if code != kerr.CoordinatorNotAvailable.Code || time.Now().After(deadline) {
				m := ""
				if msg != nil {
					m = *msg
				}
				return code, m, node, addr
			}
		}
	}
	topicID := cluster.FormatUUID(cluster.UUID{7, 7, 7})
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			group := topicName(t, "")
			coordinatorFor(t, c, group)
			types := []int8{0}
			if v >= 1 {
				types = append(types, 1)
			}
			for _, keyType := range types {
				code, msg, node, addr := find(t, v, keyType, group)
				wantCode(t, fmt.Sprintf("key type %d (%s)", keyType, msg), code, 0)
				if node != n.ID() || addr != n.KafkaAddr() {
					t.Fatalf("key type %d: coordinator %d at %s, want %d at %s", keyType, node, addr, n.ID(), n.KafkaAddr())
				}
			}
			if v < 1 {
				return
			}
			share := group + ":" + topicID + ":3"
			code, msg, node, _ := find(t, v, 2, share)
			if v < 6 {
				wantCode(t, "a share key before v6", code, kerr.InvalidRequest.Code)
				return
			}
			wantCode(t, "share key ("+msg+")", code, 0)
			if node != n.ID() {
				t.Fatalf("share coordinator %d, want %d", node, n.ID())
			}
			for _, bad := range []string{group, group + ":" + topicID, group + ":not-a-topic-id:0", group + ":" + topicID + ":x", group + ":" + topicID + ":-1", ":" + topicID + ":0"} {
				code, msg, _, _ := find(t, v, 2, bad)
				wantCode(t, "share key "+bad, code, kerr.InvalidRequest.Code)
				if !strings.Contains(msg, "Invalid key format: expected - groupId:topicId:partition") {
					t.Errorf("share key %q: message %q", bad, msg)
				}
			}
			code, _, _, _ = find(t, v, 3, group)
			wantCode(t, "key type 3", code, kerr.InvalidRequest.Code)
		})
	}
}

func conformJoinGroup(t *testing.T, c *kconn, versions []int16) {
	group, member, _ := groupFixture(t, c)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			// The sole member of a Stable group rejoins at v: as the leader, it leads
			// the next generation at once.
			_, _, gen := groupFixture(t, c)
			resp := c.do(groupJoinRequest(v, group, member)).(*kmsg.JoinGroupResponse)
			wantCode(t, "rejoin", resp.ErrorCode, 0)
			if resp.Generation != gen+1 || resp.LeaderID != member || resp.MemberID != member ||
				resp.Protocol == nil || *resp.Protocol != "range" || len(resp.Members) != 1 ||
				string(resp.Members[0].ProtocolMetadata) != "subscription" {
				t.Fatalf("rejoin at v%d: %+v", v, resp)
			}
			// Joining again with the same protocols before syncing is a retry: the
			// same generation is answered.
			again := c.do(groupJoinRequest(v, group, member)).(*kmsg.JoinGroupResponse)
			if again.ErrorCode != 0 || again.Generation != resp.Generation {
				t.Fatalf("retried join: %+v, want generation %d", again, resp.Generation)
			}
			sync := c.do(groupSyncRequest(3, group, member, resp.Generation, "a")).(*kmsg.SyncGroupResponse)
			wantCode(t, "sync", sync.ErrorCode, 0)

			bad := groupJoinRequest(v, "", "")
			wantCode(t, "empty group id", c.do(bad).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidGroupID.Code)
			bad = groupJoinRequest(v, group, "")
			bad.Protocols = nil
			wantCode(t, "no protocols", c.do(bad).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InconsistentGroupProtocol.Code)
			bad = groupJoinRequest(v, group, "")
			bad.SessionTimeoutMillis = 10
			wantCode(t, "session timeout", c.do(bad).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidSessionTimeout.Code)
			bad = groupJoinRequest(v, group, "nobody")
			wantCode(t, "unknown member", c.do(bad).(*kmsg.JoinGroupResponse).ErrorCode, kerr.UnknownMemberID.Code)
			if v >= 4 {
				other := topicName(t, "new")
				coordinatorFor(t, c, other)
				r := c.do(groupJoinRequest(v, other, "")).(*kmsg.JoinGroupResponse)
				wantCode(t, "new member", r.ErrorCode, kerr.MemberIDRequired.Code)
				if r.MemberID == "" {
					t.Fatal("MEMBER_ID_REQUIRED without a member id")
				}
			}
		})
	}
}

func conformHeartbeat(t *testing.T, c *kconn, versions []int16) {
	group, member, gen := groupFixture(t, c)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			hb := func(group, member string, gen int32) int16 {
				req := kmsg.NewPtrHeartbeatRequest()
				req.SetVersion(v)
				req.Group, req.MemberID, req.Generation = group, member, gen
				return c.do(req).(*kmsg.HeartbeatResponse).ErrorCode
			}
			wantCode(t, "heartbeat", hb(group, member, gen), 0)
			wantCode(t, "old generation", hb(group, member, gen-1), kerr.IllegalGeneration.Code)
			wantCode(t, "unknown member", hb(group, "nobody", gen), kerr.UnknownMemberID.Code)
			wantCode(t, "empty group id", hb("", member, gen), kerr.InvalidGroupID.Code)
		})
	}
}

func conformLeaveGroup(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			group := topicName(t, "")
			coordinatorFor(t, c, group)
			// A member id handed out with MEMBER_ID_REQUIRED is a member to be.
			r := c.do(groupJoinRequest(4, group, "")).(*kmsg.JoinGroupResponse)
			wantCode(t, "join", r.ErrorCode, kerr.MemberIDRequired.Code)
			leave := func(group, member string) *kmsg.LeaveGroupResponse {
				req := kmsg.NewPtrLeaveGroupRequest()
				req.SetVersion(v)
				req.Group = group
				if v < 3 {
					req.MemberID = member
				} else {
					req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: member}}
				}
				return c.do(req).(*kmsg.LeaveGroupResponse)
			}
			code := func(resp *kmsg.LeaveGroupResponse) int16 {
				if v < 3 {
					return resp.ErrorCode
				}
				wantCode(t, "top-level", resp.ErrorCode, 0)
				if len(resp.Members) != 1 {
					t.Fatalf("%d members in the answer", len(resp.Members))
				}
				return resp.Members[0].ErrorCode
			}
			wantCode(t, "leave", code(leave(group, r.MemberID)), 0)
			wantCode(t, "leave again", code(leave(group, r.MemberID)), kerr.UnknownMemberID.Code)
			wantCode(t, "empty group id", leave("", "m").ErrorCode, kerr.InvalidGroupID.Code)
		})
	}
}

func conformSyncGroup(t *testing.T, c *kconn, versions []int16) {
	group, member, _ := groupFixture(t, c)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			join := c.do(groupJoinRequest(5, group, member)).(*kmsg.JoinGroupResponse)
			wantCode(t, "join", join.ErrorCode, 0)
			wantCode(t, "old generation", c.do(groupSyncRequest(v, group, member, join.Generation-1, "x")).(*kmsg.SyncGroupResponse).ErrorCode, kerr.IllegalGeneration.Code)
			want := "\x00\x01assignment-v" + strconv.Itoa(int(v))
			resp := c.do(groupSyncRequest(v, group, member, join.Generation, want)).(*kmsg.SyncGroupResponse)
			wantCode(t, "sync", resp.ErrorCode, 0)
			if string(resp.MemberAssignment) != want {
				t.Fatalf("assignment %q, want %q relayed unchanged", resp.MemberAssignment, want)
			}
			// Stable: the current assignment at once.
			resp = c.do(groupSyncRequest(v, group, member, join.Generation, "")).(*kmsg.SyncGroupResponse)
			if resp.ErrorCode != 0 || string(resp.MemberAssignment) != want {
				t.Fatalf("sync in a stable group: %+v", resp)
			}
			wantCode(t, "unknown member", c.do(groupSyncRequest(v, group, "nobody", join.Generation, "")).(*kmsg.SyncGroupResponse).ErrorCode, kerr.UnknownMemberID.Code)
			wantCode(t, "empty group id", c.do(groupSyncRequest(v, "", member, join.Generation, "")).(*kmsg.SyncGroupResponse).ErrorCode, kerr.InvalidGroupID.Code)
		})
	}
}

func conformDescribeGroups(t *testing.T, c *kconn, versions []int16) {
	group, member, _ := groupFixture(t, c)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.SetVersion(v)
			req.Groups = []string{group, "no-such-group-" + group}
			resp := c.do(req).(*kmsg.DescribeGroupsResponse)
			if len(resp.Groups) != 2 {
				t.Fatalf("%d groups described", len(resp.Groups))
			}
			g := resp.Groups[0]
			wantCode(t, "describe", g.ErrorCode, 0)
			if g.Group != group || g.State != "Stable" || g.ProtocolType != "consumer" || g.Protocol != "range" || len(g.Members) != 1 {
				t.Fatalf("described %+v", g)
			}
			m := g.Members[0]
			if m.MemberID != member || m.ClientID != clientID || m.ClientHost != "/127.0.0.1" ||
				string(m.ProtocolMetadata) != "subscription" || string(m.MemberAssignment) != "fixture-assignment" {
				t.Fatalf("member %+v", m)
			}
			if v >= 3 && g.AuthorizedOperations != -2147483648 {
				t.Fatalf("authorized operations %d", g.AuthorizedOperations)
			}
			if u := resp.Groups[1]; u.ErrorCode != 0 || u.State != "Dead" || len(u.Members) != 0 {
				t.Fatalf("unknown group described as %+v, want Dead without error", u)
			}
		})
	}
}

func conformListGroups(t *testing.T, c *kconn, versions []int16) {
	group, _, _ := groupFixture(t, c)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrListGroupsRequest()
			req.SetVersion(v)
			resp := c.do(req).(*kmsg.ListGroupsResponse)
			wantCode(t, "list", resp.ErrorCode, 0)
			for _, g := range resp.Groups {
				if g.Group == group {
					if g.ProtocolType != "consumer" {
						t.Fatalf("protocol type %q", g.ProtocolType)
					}
					return
				}
			}
			t.Fatalf("%s not among %d listed groups", group, len(resp.Groups))
		})
		if v >= 5 {
			t.Run(fmt.Sprintf("v%d/types", v), func(t *testing.T) { listGroupTypes(t, c, v, group) })
		}
	}
}

func conformDeleteGroups(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	busy, _, _ := groupFixture(t, c)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			idle := topicName(t, "idle")
			coordinatorFor(t, c, idle)
			wantCode(t, "commit", commitCode(t, c, commitRequest(7, idle, "", -1, topic, 5)), 0)
			req := kmsg.NewPtrDeleteGroupsRequest()
			req.SetVersion(v)
			req.Groups = []string{idle, busy, "no-such-group-" + idle}
			resp := c.do(req).(*kmsg.DeleteGroupsResponse)
			if len(resp.Groups) != 3 {
				t.Fatalf("%d groups in the answer", len(resp.Groups))
			}
			for i, want := range []int16{0, kerr.NonEmptyGroup.Code, kerr.GroupIDNotFound.Code} {
				if resp.Groups[i].Group != req.Groups[i] {
					t.Fatalf("answer %d names %s", i, resp.Groups[i].Group)
				}
				wantCode(t, "delete "+req.Groups[i], resp.Groups[i].ErrorCode, want)
			}
			if got := fetchOffset(t, c, idle, topic); got.Offset != -1 {
				t.Fatalf("offset %d of a deleted group", got.Offset)
			}
		})
	}
}

func conformOffsetDelete(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			group := topicName(t, "")
			coordinatorFor(t, c, group)
			wantCode(t, "commit", commitCode(t, c, commitRequest(7, group, "", -1, topic, 5)), 0)
			req := kmsg.NewPtrOffsetDeleteRequest()
			req.SetVersion(v)
			req.Group = group
			req.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
			resp := c.do(req).(*kmsg.OffsetDeleteResponse)
			wantCode(t, "offset delete", resp.ErrorCode, 0)
			if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("answer %+v", resp.Topics)
			}
			if got := fetchOffset(t, c, group, topic); got.Offset != -1 {
				t.Fatalf("offset %d after OffsetDelete", got.Offset)
			}
			req.Group = "no-such-group-" + group
			wantCode(t, "unknown group", c.do(req).(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.GroupIDNotFound.Code)
			req.Group = ""
			wantCode(t, "empty group id", c.do(req).(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.InvalidGroupID.Code)
		})
	}
}
