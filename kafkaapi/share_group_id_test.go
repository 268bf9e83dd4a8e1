package kafkaapi_test

// One group per id, as in Kafka: a share group and a classic or KIP-848
// consumer group never share an id, and a refused first ShareGroupHeartbeat
// leaves no group behind.

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func listedTypes(c *kconn, group string) []string {
	req := kmsg.NewPtrListGroupsRequest()
	req.SetVersion(5)
	var types []string
	for _, g := range c.do(req).(*kmsg.ListGroupsResponse).Groups {
		if g.Group == group {
			types = append(types, g.GroupType)
		}
	}
	return types
}

func msgOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func TestShareGroupIDIsOneGroup(t *testing.T) {
	c := dial(t, sharedNode(t).KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)

	t.Run("classic id refused as a share group", func(t *testing.T) {
		group := topicName(t, "classic")
		coordinatorFor(t, c, group)
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.SetVersion(9)
		commit.Group, commit.Generation = group, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = 0
		rt.Partitions = append(rt.Partitions, rp)
		commit.Topics = append(commit.Topics, rt)
		wantCode(t, "offset commit", c.do(commit).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, 0)

		hb := shareHeartbeat(c, 1, group, "m1", 0, []string{topic})
		wantCode(t, "share heartbeat", hb.ErrorCode, kerr.GroupIDNotFound.Code)
		if want := "Group " + group + " is not a share group."; msgOf(hb.ErrorMessage) != want {
			t.Errorf("message %q, want %q", msgOf(hb.ErrorMessage), want)
		}
		d := kmsg.NewPtrShareGroupDescribeRequest()
		d.SetVersion(1)
		d.GroupIDs = []string{group}
		rg := c.do(d).(*kmsg.ShareGroupDescribeResponse).Groups[0]
		wantCode(t, "share describe", rg.ErrorCode, kerr.GroupIDNotFound.Code)
		if want := "Group " + group + " is not a share group."; msgOf(rg.ErrorMessage) != want {
			t.Errorf("describe message %q, want %q", msgOf(rg.ErrorMessage), want)
		}
		// The share group offsets APIs refuse it too, and the alter makes no
		// share group of it.
		notShare := "Group " + group + " is not a share group."
		alt := alterShareOffset(c, 0, group, topic, 0)
		wantCode(t, "AlterShareGroupOffsets", alt.ErrorCode, kerr.GroupIDNotFound.Code)
		if msgOf(alt.ErrorMessage) != notShare {
			t.Errorf("alter message %q, want %q", msgOf(alt.ErrorMessage), notShare)
		}
		del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		del.GroupID, del.Topics = group, []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: topic}}
		dr := c.do(del).(*kmsg.DeleteShareGroupOffsetsResponse)
		wantCode(t, "DeleteShareGroupOffsets", dr.ErrorCode, kerr.GroupIDNotFound.Code)
		if msgOf(dr.ErrorMessage) != notShare {
			t.Errorf("delete message %q, want %q", msgOf(dr.ErrorMessage), notShare)
		}
		desc := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		desc.SetVersion(1)
		desc.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group, Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}}}
		dg := c.do(desc).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
		wantCode(t, "DescribeShareGroupOffsets", dg.ErrorCode, kerr.GroupIDNotFound.Code)
		if msgOf(dg.ErrorMessage) != notShare {
			t.Errorf("describe offsets message %q, want %q", msgOf(dg.ErrorMessage), notShare)
		}
		if got := listedTypes(c, group); len(got) != 1 || got[0] != "classic" {
			t.Errorf("listed as %v, want once as classic", got)
		}
	})

	t.Run("share id refused as a classic or consumer group", func(t *testing.T) {
		group := topicName(t, "share")
		coordinatorFor(t, c, group)
		wantCode(t, "share join", shareHeartbeat(c, 1, group, "m1", 0, []string{topic}).ErrorCode, 0)

		join := kmsg.NewPtrJoinGroupRequest()
		join.SetVersion(5)
		join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = group, 30000, 30000, "consumer"
		join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1}}}
		wantCode(t, "JoinGroup", c.do(join).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InconsistentGroupProtocol.Code)

		cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		cgh.SetVersion(1)
		cgh.Group, cgh.MemberID, cgh.MemberEpoch, cgh.RebalanceTimeoutMillis = group, "c1", 0, 30000
		cgh.SubscribedTopicNames, cgh.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		r := c.do(cgh).(*kmsg.ConsumerGroupHeartbeatResponse)
		wantCode(t, "ConsumerGroupHeartbeat", r.ErrorCode, kerr.GroupIDNotFound.Code)
		if want := "Group " + group + " is not a consumer group."; msgOf(r.ErrorMessage) != want {
			t.Errorf("message %q, want %q", msgOf(r.ErrorMessage), want)
		}

		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.SetVersion(9)
		commit.Group, commit.Generation = group, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rt.Partitions = append(rt.Partitions, kmsg.NewOffsetCommitRequestTopicPartition())
		commit.Topics = append(commit.Topics, rt)
		wantCode(t, "OffsetCommit", c.do(commit).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.GroupIDNotFound.Code)

		d := kmsg.NewPtrConsumerGroupDescribeRequest()
		d.SetVersion(1)
		d.Groups = []string{group}
		rg := c.do(d).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
		wantCode(t, "ConsumerGroupDescribe", rg.ErrorCode, kerr.GroupIDNotFound.Code)
		if want := "Group " + group + " is not a consumer group."; msgOf(rg.ErrorMessage) != want {
			t.Errorf("describe message %q, want %q", msgOf(rg.ErrorMessage), want)
		}
		// TxnOffsetCommit: GROUP_ID_NOT_FOUND for every partition, as Kafka
		// answers ("Group G is not a consumer group."), before any producer check.
		txn := kmsg.NewPtrTxnOffsetCommitRequest()
		txn.SetVersion(3)
		txn.TransactionalID, txn.Group, txn.ProducerID, txn.ProducerEpoch, txn.Generation = group, group, 1, 0, -1
		tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		tp.Offset = 1
		txn.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{tp}}}
		wantCode(t, "TxnOffsetCommit", c.do(txn).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.GroupIDNotFound.Code)

		// DescribeGroups (v0..v4 served) of a share group: Dead with no error, as
		// Kafka answers these versions (v6 would say "is not a classic group").
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.SetVersion(4)
		dg.Groups = []string{group}
		if g := c.do(dg).(*kmsg.DescribeGroupsResponse).Groups[0]; g.ErrorCode != 0 || g.State != "Dead" {
			t.Errorf("DescribeGroups v4: %s state %q, want Dead with no error", errName(g.ErrorCode), g.State)
		}
		if got := listedTypes(c, group); len(got) != 1 || got[0] != "share" {
			t.Errorf("listed as %v, want once as share", got)
		}
	})

	t.Run("refused first heartbeat leaves nothing", func(t *testing.T) {
		group := topicName(t, "refused")
		coordinatorFor(t, c, group)
		wantCode(t, "join without subscription", shareHeartbeat(c, 1, group, "m1", 0, nil).ErrorCode, kerr.InvalidRequest.Code)
		if got := listedTypes(c, group); len(got) != 0 {
			t.Errorf("a refused first heartbeat left a group listed as %v", got)
		}
	})
}

// After a restart the coordinator loads both kinds of group from the group's
// partition before it serves either, so each id keeps its one type: a share
// heartbeat for the classic group and a JoinGroup for the share group are
// refused at once (and COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR until
// the load).
func TestShareGroupIDIsOneGroupAfterRestart(t *testing.T) {
	start, _ := restartableNode(t, time.Hour)
	n := start()
	t.Cleanup(func() { n.Close() }) // the node running when the test ends
	c := dial(t, n.KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	classic, share := topicName(t, "classic"), topicName(t, "share")
	coordinatorFor(t, c, classic)
	coordinatorFor(t, c, share)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.SetVersion(9)
	commit.Group, commit.Generation = classic, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rt.Partitions = append(rt.Partitions, kmsg.NewOffsetCommitRequestTopicPartition())
	commit.Topics = append(commit.Topics, rt)
	wantCode(t, "offset commit", c.do(commit).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, 0)
	wantCode(t, "share join", shareHeartbeat(c, 1, share, "m1", 0, []string{topic}).ErrorCode, 0)

	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = start()
	c = dial(t, n.KafkaAddr())
	loading := func(code int16) bool {
		return code == kerr.CoordinatorLoadInProgress.Code || code == kerr.NotCoordinator.Code || code == kerr.CoordinatorNotAvailable.Code
	}
	var hb *kmsg.ShareGroupHeartbeatResponse
	waitFor(t, 20*time.Second, "the classic group's coordinator to load", func() bool {
		hb = shareHeartbeat(c, 1, classic, "m1", 0, []string{topic})
		return !loading(hb.ErrorCode)
	})
	wantCode(t, "share heartbeat for the classic group", hb.ErrorCode, kerr.GroupIDNotFound.Code)

	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(5)
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = share, 30000, 30000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1}}}
	var jr *kmsg.JoinGroupResponse
	waitFor(t, 20*time.Second, "the share group's coordinator to load", func() bool {
		jr = c.do(join).(*kmsg.JoinGroupResponse)
		return !loading(jr.ErrorCode)
	})
	wantCode(t, "JoinGroup for the share group", jr.ErrorCode, kerr.InconsistentGroupProtocol.Code)
}
