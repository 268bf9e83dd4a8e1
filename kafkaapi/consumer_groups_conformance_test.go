package kafkaapi_test

// Conformance tests of the KIP-848 keys (68, 69) and of ListGroups' group types at
// every advertised version, against the shared node. The reconciliation itself is
// tested in package groups and end to end with franz-go (consumer_groups_test.go).

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	conformanceTests[68] = conformConsumerGroupHeartbeat
	conformanceTests[69] = conformConsumerGroupDescribe
}

// cgJoin sends a joining heartbeat (epoch 0) of member to group, subscribed to topics.
func cgJoin(c *kconn, v int16, group, member string, topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.SetVersion(v)
	req.Group, req.MemberID, req.MemberEpoch = group, member, 0
	req.RebalanceTimeoutMillis = 60000
	req.SubscribedTopicNames = topics
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return c.do(req).(*kmsg.ConsumerGroupHeartbeatResponse)
}

// cgBeat sends a full heartbeat of member at epoch, owning what a says.
func cgBeat(c *kconn, v int16, group, member string, epoch int32, a *kmsg.ConsumerGroupHeartbeatResponseAssignment) *kmsg.ConsumerGroupHeartbeatResponse {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.SetVersion(v)
	req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if a != nil {
		for _, t := range a.Topics {
			rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			rt.TopicID, rt.Partitions = t.TopicID, t.Partitions
			req.Topics = append(req.Topics, rt)
		}
	}
	return c.do(req).(*kmsg.ConsumerGroupHeartbeatResponse)
}

func assignedCount(a *kmsg.ConsumerGroupHeartbeatResponseAssignment) int {
	n := 0
	if a != nil {
		for _, t := range a.Topics {
			n += len(t.Partitions)
		}
	}
	return n
}

func conformConsumerGroupHeartbeat(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 4, nil)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			group := topicName(t, "group")
			coordinatorFor(t, c, group)
			r := cgJoin(c, v, group, "m1", topic)
			wantCode(t, "join", r.ErrorCode, 0)
			if r.MemberEpoch < 1 || r.HeartbeatIntervalMillis <= 0 || assignedCount(r.Assignment) != 4 {
				t.Fatalf("join: epoch %d, interval %d, %d partitions assigned, want all 4", r.MemberEpoch, r.HeartbeatIntervalMillis, assignedCount(r.Assignment))
			}
			a1, e1 := r.Assignment, r.MemberEpoch
			r = cgBeat(c, v, group, "m1", e1, a1)
			wantCode(t, "heartbeat", r.ErrorCode, 0)

			// A second member: m1 must revoke two partitions before m2 gets them.
			r2 := cgJoin(c, v, group, "m2", topic)
			wantCode(t, "second join", r2.ErrorCode, 0)
			if assignedCount(r2.Assignment) != 0 {
				t.Fatalf("m2 got %d partitions while m1 still owns them", assignedCount(r2.Assignment))
			}
			r = cgBeat(c, v, group, "m1", e1, a1)
			wantCode(t, "heartbeat after m2 joined", r.ErrorCode, 0)
			if assignedCount(r.Assignment) != 2 || r.MemberEpoch != e1 {
				t.Fatalf("m1: %d partitions at epoch %d, want 2 at its epoch %d until it revokes", assignedCount(r.Assignment), r.MemberEpoch, e1)
			}
			a1 = r.Assignment
			r = cgBeat(c, v, group, "m1", e1, a1) // acknowledges the revocation
			wantCode(t, "revocation", r.ErrorCode, 0)
			if r.MemberEpoch <= e1 {
				t.Fatalf("m1 stays at epoch %d after revoking", r.MemberEpoch)
			}
			e1 = r.MemberEpoch
			r2 = cgBeat(c, v, group, "m2", r2.MemberEpoch, r2.Assignment)
			wantCode(t, "m2 heartbeat", r2.ErrorCode, 0)
			if assignedCount(r2.Assignment) != 2 || r2.MemberEpoch != e1 {
				t.Fatalf("m2: %d partitions at epoch %d after m1 revoked, want 2 at %d", assignedCount(r2.Assignment), r2.MemberEpoch, e1)
			}

			wantCode(t, "fenced epoch", cgBeat(c, v, group, "m1", e1+10, a1).ErrorCode, kerr.FencedMemberEpoch.Code)
			wantCode(t, "unknown member", cgBeat(c, v, group, "nobody", 3, nil).ErrorCode, kerr.UnknownMemberID.Code)
			wantCode(t, "empty member id", cgJoin(c, v, group, "", topic).ErrorCode, kerr.InvalidRequest.Code)
			bad := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			bad.SetVersion(v)
			bad.Group, bad.MemberID, bad.RebalanceTimeoutMillis = group, "m3", 1000
			bad.SubscribedTopicNames, bad.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			bad.ServerAssignor = kmsg.StringPtr("sticky")
			wantCode(t, "unknown assignor", c.do(bad).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.UnsupportedAssignor.Code)

			// A classic member of the embedded consumer protocol is served by the
			// group (KIP-848's online migration); another protocol type is refused.
			wantCode(t, "classic join", c.do(groupJoinRequest(5, group, "")).(*kmsg.JoinGroupResponse).ErrorCode, kerr.MemberIDRequired.Code)
			connect := groupJoinRequest(5, group, "")
			connect.ProtocolType = "connect"
			wantCode(t, "join of another protocol type", c.do(connect).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InconsistentGroupProtocol.Code)

			leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			leave.SetVersion(v)
			leave.Group, leave.MemberID, leave.MemberEpoch = group, "m2", -1
			lr := c.do(leave).(*kmsg.ConsumerGroupHeartbeatResponse)
			wantCode(t, "leave", lr.ErrorCode, 0)
			if lr.MemberEpoch != -1 {
				t.Fatalf("leave answered epoch %d", lr.MemberEpoch)
			}
		})
	}
}

func conformConsumerGroupDescribe(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 3, nil)
	group := topicName(t, "group")
	coordinatorFor(t, c, group)
	r := cgJoin(c, 1, group, "member-a", topic)
	wantCode(t, "join", r.ErrorCode, 0)
	classic, _, _ := groupFixture(t, c)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.SetVersion(v)
			req.Groups = []string{group, classic, group + "-none"}
			resp := c.do(req).(*kmsg.ConsumerGroupDescribeResponse)
			if len(resp.Groups) != 3 {
				t.Fatalf("%d groups described", len(resp.Groups))
			}
			g := resp.Groups[0]
			wantCode(t, "consumer group", g.ErrorCode, 0)
			if g.State != "Stable" || g.Epoch < 1 || g.AssignmentEpoch != g.Epoch || g.AssignorName != "uniform" || len(g.Members) != 1 {
				t.Fatalf("described %+v", g)
			}
			m := g.Members[0]
			if m.MemberID != "member-a" || m.MemberEpoch != g.Epoch || len(m.Assignment.TopicPartitions) != 1 ||
				m.Assignment.TopicPartitions[0].Topic != topic || len(m.Assignment.TopicPartitions[0].Partitions) != 3 ||
				len(m.TargetAssignment.TopicPartitions) != 1 || len(m.SubscribedTopics) != 1 {
				t.Fatalf("member %+v", m)
			}
			if v >= 1 && m.MemberType != 1 {
				t.Fatalf("member type %d, want 1 (consumer)", m.MemberType)
			}
			wantCode(t, "classic group", resp.Groups[1].ErrorCode, kerr.GroupIDNotFound.Code)
			wantCode(t, "unknown group", resp.Groups[2].ErrorCode, kerr.GroupIDNotFound.Code)
		})
	}
}

// listGroupTypes checks ListGroups v5's types: the classic fixture is "classic",
// a KIP-848 group "consumer", and the types filter keeps only those asked.
func listGroupTypes(t *testing.T, c *kconn, v int16, classic string) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	group := topicName(t, "cg")
	coordinatorFor(t, c, group)
	wantCode(t, "join", cgJoin(c, 1, group, "m", topic).ErrorCode, 0)
	for _, filter := range [][]string{nil, {"Consumer"}, {"classic"}} {
		req := kmsg.NewPtrListGroupsRequest()
		req.SetVersion(v)
		req.TypesFilter = filter
		resp := c.do(req).(*kmsg.ListGroupsResponse)
		wantCode(t, "list", resp.ErrorCode, 0)
		types := map[string]string{}
		for _, g := range resp.Groups {
			types[g.Group] = g.GroupType
		}
		wantClassic, wantConsumer := filter == nil || filter[0] == "classic", filter == nil || filter[0] == "Consumer"
		if ty, ok := types[classic]; ok != wantClassic || (ok && ty != "classic") {
			t.Fatalf("filter %v: classic group listed %v as %q", filter, ok, ty)
		}
		if ty, ok := types[group]; ok != wantConsumer || (ok && ty != "consumer") {
			t.Fatalf("filter %v: consumer group listed %v as %q", filter, ok, ty)
		}
	}
}
