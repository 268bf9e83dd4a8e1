package e2e

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batchtest"
	"skiff/internal/testnode"
)

// TestAcksAllPipelined: two acks=all Produce requests sent back to back on one
// connection while a follower in the ISR is stopped are both appended at once
// (the second does not wait for the first's acknowledgement), and once the
// follower resumes they are answered in request order, then a Metadata request
// sent behind them.
func TestAcksAllPipelined(t *testing.T) {
	// The stopped follower stays in the ISR and the cluster for the test's length.
	nodes := testnode.StartCluster(t, 3, "--session-timeout", "20s", "--replica-lag-time-max", "20s")
	const topic = "pipelined"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	minISR := "2"
	adm := kadm.NewClient(newClient(t, nodes[0].Addr))
	if r, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil || r.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, r.Err)
	}
	var p kadm.PartitionDetail
	poll(t, 30*time.Second, "a full ISR", func() bool {
		md, err := metadata(t, nodes[0].Addr, topic)
		if err != nil {
			return false
		}
		p = md.Topics[topic].Partitions[0]
		return len(p.ISR) == 3 && p.Leader >= 0
	})
	var leader, follower *testnode.Node
	for _, n := range nodes {
		switch {
		case n.ID == p.Leader:
			leader = n
		case follower == nil:
			follower = n
		}
	}
	if err := follower.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := follower.Signal(syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		}
	}
	defer resume()

	nc, err := net.DialTimeout("tcp", leader.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(45 * time.Second))
	reqs := []kmsg.Request{produceOne(topic, "first"), produceOne(topic, "second"), metadataOf()}
	for i, req := range reqs {
		if _, err := nc.Write(rawFrame(req, int32(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	// Both batches reach the leader's log while the first still waits for the
	// stopped follower: OffsetForLeaderEpoch gives the current epoch's end.
	poll(t, 15*time.Second, "both produce requests appended", func() bool {
		return leaderLogEnd(t, leader.Addr, topic, p.LeaderEpoch) == 2
	})
	resume()
	for i, req := range reqs {
		corr, resp, err := readRawAnswer(nc, req)
		if err != nil {
			t.Fatal(err)
		}
		if corr != int32(i+1) {
			t.Fatalf("answer %d has correlation id %d, want %d (answers must keep request order)", i, corr, i+1)
		}
		if pr, ok := resp.(*kmsg.ProduceResponse); ok {
			got := pr.Topics[0].Partitions[0]
			if got.ErrorCode != 0 || got.BaseOffset != int64(i) {
				t.Fatalf("produce %d: error %v, base offset %d, want none and %d", i, kerr.ErrorForCode(got.ErrorCode), got.BaseOffset, i)
			}
		}
	}
}

func produceOne(topic, value string) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(7)
	req.Acks, req.TimeoutMillis = -1, 40_000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{
		{Partition: 0, Records: batchtest.Strings(batchtest.Plain, time.Now().UnixMilli(), value)}}}}
	return req
}

// leaderLogEnd is partition 0's log end offset on its leader (-1 if not known).
func leaderLogEnd(t *testing.T, addr, topic string, epoch int32) int64 {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(3)
	req.ReplicaID = -1
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, epoch, epoch
	req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{rp}}}
	resp, err := rawRequest(t, addr, req, 5*time.Second)
	if err != nil {
		return -1
	}
	got := resp.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
	if got.ErrorCode != 0 {
		return -1
	}
	return got.EndOffset
}
