package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batchtest"
	"skiff/internal/testnode"
)

// TestProduceLeaderHints sends a Produce to a broker that does not lead the
// partition, at each version from v7: from v10 the NOT_LEADER_OR_FOLLOWER answer
// names the leader and its epoch (current_leader) and the leader's address
// (node_endpoints), as Kafka does (KIP-951), so that a client moves without a
// Metadata round trip; before v10 it carries neither. Then franz-go, which
// negotiates v11, produces through the follower's cluster view.
func TestProduceLeaderHints(t *testing.T) {
	nodes := testnode.StartCluster(t, 2, clusterArgs...)
	waitBrokers(t, 2, nodes...)
	const topic = "hints"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, nodes[0].Addr))
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, r.Err)
	}
	var leaderID, epoch int32 = -1, -1
	poll(t, 30*time.Second, "a leader of the partition", func() bool {
		md, err := metadata(t, nodes[0].Addr, topic)
		if err != nil {
			return false
		}
		p := md.Topics[topic].Partitions[0]
		leaderID, epoch = p.Leader, p.LeaderEpoch
		return leaderID >= 0
	})
	var leader, follower *testnode.Node
	for _, n := range nodes {
		if n.ID == leaderID {
			leader = n
		} else {
			follower = n
		}
	}
	if leader == nil || follower == nil {
		t.Fatalf("leader %d is not one of the two nodes", leaderID)
	}
	host, port, err := net.SplitHostPort(leader.Addr)
	if err != nil {
		t.Fatal(err)
	}
	wantPort, _ := strconv.Atoi(port)
	for v := int16(7); v <= 11; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(v)
			req.Acks, req.TimeoutMillis = -1, 5000
			req.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{
				{Partition: 0, Records: batchtest.Strings(batchtest.Plain, time.Now().UnixMilli(), "x")}}}}
			resp, err := rawRequest(t, follower.Addr, req, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			r := resp.(*kmsg.ProduceResponse)
			p := r.Topics[0].Partitions[0]
			if p.ErrorCode != kerr.NotLeaderForPartition.Code {
				t.Fatalf("the follower answered %d, want NOT_LEADER_OR_FOLLOWER", p.ErrorCode)
			}
			if v < 10 {
				if p.CurrentLeader.LeaderID != -1 || len(r.Brokers) != 0 {
					t.Fatalf("v%d carries hints: %+v %+v", v, p.CurrentLeader, r.Brokers)
				}
				return
			}
			if p.CurrentLeader.LeaderID != leaderID || p.CurrentLeader.LeaderEpoch != epoch {
				t.Fatalf("current leader %d epoch %d, want %d epoch %d", p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch, leaderID, epoch)
			}
			if len(r.Brokers) != 1 || r.Brokers[0].NodeID != leaderID || r.Brokers[0].Host != host || r.Brokers[0].Port != int32(wantPort) {
				t.Fatalf("node endpoints %+v, want only %d at %s", r.Brokers, leaderID, leader.Addr)
			}
		})
	}
	// A request for the partition and one no broker has: only the first gets a hint.
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(11)
	req.Acks, req.TimeoutMillis = 1, 5000
	rec := batchtest.Strings(batchtest.Plain, time.Now().UnixMilli(), "y")
	req.Topics = []kmsg.ProduceRequestTopic{
		{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: rec}}},
		{Topic: "no-such-topic", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: rec}}},
	}
	resp, err := rawRequest(t, follower.Addr, req, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*kmsg.ProduceResponse)
	if u := r.Topics[1].Partitions[0]; u.ErrorCode != kerr.UnknownTopicOrPartition.Code || u.CurrentLeader.LeaderID != -1 {
		t.Fatalf("unknown topic: %d, leader %d; want UNKNOWN_TOPIC_OR_PARTITION and no leader", u.ErrorCode, u.CurrentLeader.LeaderID)
	}
	if len(r.Brokers) != 1 {
		t.Fatalf("node endpoints %+v, want the leader's only", r.Brokers)
	}
}
