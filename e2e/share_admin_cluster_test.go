package e2e

// Share group offsets administration (AlterShareGroupOffsets,
// DeleteShareGroupOffsets, DeleteGroups) of a share-partition led by a node that
// is not the group's coordinator.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/appliance"
	"skiff/internal/testnode"
)

// TestShareOffsetsAdminLedElsewhere: on three nodes, a topic whose one partition
// is led by a node other than the share group's coordinator. Through the
// coordinator (kadm), AlterShareGroupOffsets moves the share-partition's start
// offset at the leader and a share consumer then gets the records from there
// on; the reset is refused with GROUP_NOT_EMPTY while the consumer is a member;
// DeleteShareGroupOffsets and DeleteGroups delete the state at the leader; a
// partition whose leader is down answers LEADER_NOT_AVAILABLE.
func TestShareOffsetsAdminLedElsewhere(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, clusterArgs...)
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.Addr)
	}
	const topic, downTopic, group = "share-admin", "share-admin-down", "share-admin-group"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)

	var coord int32 = -1
	poll(t, 30*time.Second, "the group's coordinator", func() bool {
		if r := adm.FindGroupCoordinators(ctx, group)[group]; r.Err == nil {
			coord = r.NodeID
		}
		return coord >= 0
	})
	var others []*testnode.Node
	for _, n := range nodes {
		if n.ID != coord {
			others = append(others, n)
		}
	}
	leader, down := others[0], others[1]
	createAssigned(t, seeds[0], topic, 1, []int32{leader.ID, coord, down.ID})
	poll(t, 30*time.Second, "node "+strconv.Itoa(int(leader.ID))+" leading "+topic, func() bool {
		ps := leadersOf(t, seeds[0], topic)
		return len(ps) == 1 && ps[0].Leader == leader.ID
	})
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("k" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	alter := func(topic string, start int64) (kadm.AlterShareGroupOffsetsResponses, error) {
		offs := kadm.Offsets{}
		offs.AddOffset(topic, 0, start, -1)
		return adm.AlterShareGroupOffsets(ctx, group, offs)
	}
	// leaderState is the share-partition as its leader's admin API shows it,
	// ok false when the leader has none.
	leaderState := func() (appliance.SharePartitionStatus, bool) {
		t.Helper()
		code, body, err := leader.AdminGet("/v1/share-partitions?local=1&group=" + group)
		if err != nil || code != 200 {
			t.Fatalf("share-partitions of node %d: %d %v %s", leader.ID, code, err, body)
		}
		var ans appliance.SharePartitionsAnswer
		if err := json.Unmarshal(body, &ans); err != nil {
			t.Fatal(err)
		}
		for _, p := range ans.Partitions {
			if p.Topic == topic && p.Partition == 0 {
				return p, true
			}
		}
		return appliance.SharePartitionStatus{}, false
	}
	described := func() (int64, error) {
		d, err := adm.DescribeShareGroupOffsets(ctx, group)
		if err != nil {
			return 0, err
		}
		if err := d.Error(); err != nil {
			return 0, err
		}
		o, ok := d[group].Offsets.Lookup(topic, 0)
		if !ok {
			return -1, nil
		}
		return o.StartOffset, o.Err
	}

	// Alter: the leader's window starts at 6.
	r, err := alter(topic, 6)
	if err != nil || r.Error() != nil {
		t.Fatalf("alter share group offsets: %v %v", err, r.Error())
	}
	if st, ok := leaderState(); !ok || st.StartOffset != 6 || st.EndOffset != 6 {
		t.Fatalf("leader's share-partition %+v (found %v), want SPSO and SPEO 6", st, ok)
	}
	if got, err := described(); err != nil || got != 6 {
		t.Fatalf("described start offset %d (%v), want 6", got, err)
	}
	if r, err := alter(topic+"-none", 0); err != nil || !errors.Is(r.Error(), kerr.UnknownTopicOrPartition) {
		t.Errorf("alter of an unknown topic: %v %v, want UNKNOWN_TOPIC_OR_PARTITION", err, r.Error())
	}

	// A share consumer gets the records from 6 on, and makes the group non-empty.
	member := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
		kgo.FetchMaxWait(500*time.Millisecond))
	var got []string
	poll(t, time.Minute, "records 6..9 consumed", func() bool {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		defer pcancel()
		member.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			if r.Offset < 6 {
				t.Errorf("record %s at offset %d, below the new start offset 6", r.Key, r.Offset)
			}
			got = append(got, fmt.Sprintf("%s@%d", r.Key, r.Offset))
			r.Ack(kgo.AckAccept)
		})
		return len(got) >= 4
	})
	if want := "[k6@6 k7@7 k8@8 k9@9]"; fmt.Sprint(got) != want {
		t.Errorf("consumed %v, want %s", got, want)
	}
	if err := member.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := alter(topic, 2); !errors.Is(err, kerr.NonEmptyGroup) {
		t.Errorf("alter with a member: %v, want NON_EMPTY_GROUP", err)
	}
	member.Close()
	poll(t, 30*time.Second, "the member gone", func() bool {
		d, err := adm.DescribeShareGroups(ctx, group)
		return err == nil && d[group].Err == nil && len(d[group].Members) == 0
	})
	if got, err := described(); err != nil || got != 10 {
		t.Errorf("described start offset %d (%v) after everything was accepted, want 10", got, err)
	}

	// DeleteShareGroupOffsets deletes the state at the leader.
	dr, err := adm.DeleteShareGroupOffsets(ctx, group, topic)
	if err != nil || dr.Error() != nil {
		t.Fatalf("delete share group offsets: %v %v", err, dr.Error())
	}
	if st, ok := leaderState(); ok {
		t.Errorf("leader still has %+v after DeleteShareGroupOffsets", st)
	}
	if got, err := described(); err != nil || got != -1 {
		t.Errorf("described start offset %d (%v) after deletion, want -1", got, err)
	}

	// DeleteGroups deletes a new state at the leader, and the group.
	if r, err := alter(topic, 3); err != nil || r.Error() != nil {
		t.Fatalf("alter again: %v %v", err, r.Error())
	}
	if st, ok := leaderState(); !ok || st.StartOffset != 3 {
		t.Fatalf("leader's share-partition %+v (found %v), want SPSO 3", st, ok)
	}
	if _, err := adm.DeleteGroup(ctx, group); err != nil {
		t.Fatalf("delete group: %v", err)
	}
	if st, ok := leaderState(); ok {
		t.Errorf("leader still has %+v after DeleteGroups", st)
	}
	if _, err := described(); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Errorf("describe after DeleteGroups: %v, want GROUP_ID_NOT_FOUND", err)
	}

	// A partition whose only replica is down: LEADER_NOT_AVAILABLE, retriable.
	createOn(t, seeds[0], downTopic, down.ID)
	down.Kill()
	r, err = alter(downTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := r.Lookup(downTopic, 0); !errors.Is(e, kerr.LeaderNotAvailable) || !kerr.IsRetriable(e) {
		t.Errorf("alter with the leader down: %v, want LEADER_NOT_AVAILABLE", e)
	}
}

// createOn creates topic with one partition whose only replica is node id.
func createOn(t *testing.T, addr, topic string, id int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	rt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{id}}}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, newClient(t, addr))
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s on node %d: %v %+v", topic, id, err, resp)
	}
	poll(t, 30*time.Second, topic+" led by node "+strconv.Itoa(int(id)), func() bool {
		ps := leadersOf(t, addr, topic)
		return len(ps) == 1 && ps[0].Leader == id
	})
}
