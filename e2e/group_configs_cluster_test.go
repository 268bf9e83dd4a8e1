package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/testnode"
)

// TestGroupConfigsEveryNodeAndDeleteGroups: on a three-node cluster, GROUP
// configs set through one node are described alike by every node (each asked
// directly), and DeleteGroups of the group removes them, as in Kafka: every
// node then describes the broker's defaults, and a new group of that name
// starts without them.
func TestGroupConfigsEveryNodeAndDeleteGroups(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, "--group-initial-rebalance-delay", "0s")
	const topic, group = "groupcfg-cluster", "groupcfg-cluster-g"
	createTopicRF(t, nodes[0].Addr, topic, 1, 3)
	cl := newClient(t, nodes[0].Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	setShareGroupConfig(t, cl, group, "share.delivery.count.limit", "3")
	setShareGroupConfig(t, cl, group, "consumer.session.timeout.ms", "50000")

	// describe asks node n itself for the group's configs set on the group.
	describe := func(n *testnode.Node) map[string]string {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, cl.Broker(int(n.ID)))
		if err != nil {
			t.Fatalf("node %d: %v", n.ID, err)
		}
		rr := resp.Resources[0]
		if err := kerr.ErrorForCode(rr.ErrorCode); err != nil {
			t.Fatalf("node %d: %v", n.ID, err)
		}
		got := map[string]string{}
		for _, c := range rr.Configs {
			if c.Source == kmsg.ConfigSourceGroupConfig {
				got[c.Name] = *c.Value
			}
		}
		return got
	}
	for _, n := range nodes {
		if got := describe(n); len(got) != 2 || got["share.delivery.count.limit"] != "3" || got["consumer.session.timeout.ms"] != "50000" {
			t.Errorf("node %d describes %v", n.ID, got)
		}
	}

	// The group exists once it commits an offset; it has no members, so it
	// can be deleted.
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = group, -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = topic
	ct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0}}
	commit.Topics = append(commit.Topics, ct)
	if _, err := cl.Request(ctx, commit); err != nil {
		t.Fatal(err)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{group}
	dresp, err := del.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(dresp.Groups[0].ErrorCode); err != nil {
		t.Fatalf("delete group: %v", err)
	}
	for _, n := range nodes {
		// Every node reads the tombstone from the state topic up to its end.
		if got := describe(n); len(got) != 0 {
			t.Errorf("node %d still describes the deleted group's configs %v", n.ID, got)
		}
	}
}
