package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batchtest"
	"skiff/internal/testnode"
)

// The replication contract, checked under faults: a workload of idempotent acks=all
// producers and a consumer runs against three nodes and a topic with RF 3 and
// min.insync.replicas 2 while a fault is injected; afterwards every acknowledged
// record is in the log exactly once, in produce order per partition, and every record
// the consumer saw during the run is still in the log at the same offset (nothing
// consumed was later lost).

const faultTopic = "faults"

var faultArgs = []string{"--session-timeout", "2s", "--replica-lag-time-max", "4s", "--leader-imbalance-check-interval", "2s"}

func startFaultCluster(t *testing.T) []*testnode.Node { return startFaultClusterOf(t, 3) }

func startFaultClusterOf(t *testing.T, size int) []*testnode.Node {
	return setUpFaultTopic(t, testnode.StartCluster(t, size, faultArgs...))
}

// setUpFaultTopic creates the fault topic (RF 3, min.insync.replicas 2, 4 partitions)
// and waits for full ISRs.
func setUpFaultTopic(t *testing.T, nodes []*testnode.Node) []*testnode.Node {
	return setUpFaultTopicOf(t, nodes, 4)
}

// setUpFaultTopicOf creates the fault topic with the given partitions (RF 3,
// min.insync.replicas 2) once every node knows every broker, and waits for full ISRs.
func setUpFaultTopicOf(t *testing.T, nodes []*testnode.Node, partitions int32) []*testnode.Node {
	waitBrokers(t, len(nodes), nodes...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	minISR := "2"
	adm := kadm.NewClient(newClient(t, nodes[0].Addr))
	if r, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": &minISR}, faultTopic); err != nil || r.Err != nil {
		t.Fatalf("create %s: %v %v", faultTopic, err, r.Err)
	}
	waitFullISR(t, nodes)
	return nodes
}

// waitFullISR waits until every partition of the fault topic has a leader and all
// three of its replicas in its ISR.
func waitFullISR(t *testing.T, nodes []*testnode.Node) {
	t.Helper()
	poll(t, 60*time.Second, "every ISR complete", func() bool {
		for _, n := range nodes {
			if !n.Running() {
				continue
			}
			md, err := metadata(t, n.Addr, faultTopic)
			if err != nil {
				return false
			}
			for _, p := range md.Topics[faultTopic].Partitions {
				if len(p.ISR) != 3 || p.Leader < 0 {
					return false
				}
			}
			return true
		}
		return false
	})
}

func seeds(nodes []*testnode.Node) kgo.Opt {
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.Addr)
	}
	return kgo.SeedBrokers(addrs...)
}

// leaderOf returns the node leading partition p of the fault topic, asking any live node.
func leaderOf(t *testing.T, nodes []*testnode.Node, p int32) *testnode.Node {
	t.Helper()
	var leader *testnode.Node
	poll(t, 30*time.Second, fmt.Sprintf("a leader of partition %d", p), func() bool {
		for _, n := range nodes {
			if !n.Running() {
				continue
			}
			md, err := metadata(t, n.Addr, faultTopic)
			if err != nil {
				continue
			}
			id := md.Topics[faultTopic].Partitions[p].Leader
			for _, m := range nodes {
				if m.ID == id && m.Running() {
					leader = m
					return true
				}
			}
		}
		return false
	})
	return leader
}

func anyRunning(nodes []*testnode.Node, not *testnode.Node) *testnode.Node {
	for _, n := range nodes {
		if n != not && n.Running() {
			return n
		}
	}
	return nil
}

func TestFaultLeaderSIGTERM(t *testing.T) { leaderFaultLoop(t, "SIGTERM", (*testnode.Node).Stop) }
func TestFaultLeaderSIGKILL(t *testing.T) { leaderFaultLoop(t, "SIGKILL", (*testnode.Node).Kill) }

// leaderFaultLoop stops the leader of partition 0 five times in a row, restarting it
// in between, while the workload runs.
func leaderFaultLoop(t *testing.T, what string, fault func(*testnode.Node)) {
	nodes := startFaultCluster(t)
	w := startWorkload(t, nodes)
	w.progress(500, 30*time.Second)
	for round := 1; round <= 5; round++ {
		leader := leaderOf(t, nodes, 0)
		start := time.Now()
		fault(leader)
		w.progress(200, 60*time.Second)
		t.Logf("round %d: %s of broker %d; 200 more records acknowledged %v later", round, what, leader.ID, time.Since(start))
		leader.Restart()
		waitFullISR(t, nodes)
	}
	w.progress(200, 30*time.Second)
	w.finish(nodes[0].Addr)
}

// TestFaultLeaderPaused pauses the leader (SIGSTOP) for longer than the session
// timeout: the others move on without it; when it resumes (SIGCONT) it must not accept
// or serve writes as a leader any more, and it rejoins as a follower.
func TestFaultLeaderPaused(t *testing.T) {
	nodes := startFaultCluster(t)
	w := startWorkload(t, nodes)
	w.progress(500, 30*time.Second)
	leader := leaderOf(t, nodes, 0)
	if err := leader.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	other := anyRunning(nodes, leader)
	poll(t, 30*time.Second, "partition 0 led by another broker", func() bool {
		md, err := metadata(t, other.Addr, faultTopic)
		return err == nil && md.Topics[faultTopic].Partitions[0].Leader >= 0 && md.Topics[faultTopic].Partitions[0].Leader != leader.ID
	})
	w.progress(300, 60*time.Second)
	// Straight after SIGCONT, before it has heard anything, the old leader must refuse
	// to act as leader: its session is no longer certainly valid.
	if err := leader.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(7)
	req.Acks, req.TimeoutMillis = 1, 2000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: faultTopic, Partitions: []kmsg.ProduceRequestTopicPartition{
		{Partition: 0, Records: batchtest.Strings(batchtest.Plain, time.Now().UnixMilli(), "zzz-split-brain")}}}}
	resp, err := rawRequest(t, leader.Addr, req, 10*time.Second)
	if err != nil {
		t.Fatalf("produce to the resumed old leader: %v", err)
	}
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("the resumed old leader answered a produce with error %d, want NOT_LEADER_OR_FOLLOWER (%d)", code, kerr.NotLeaderForPartition.Code)
	}
	waitFullISR(t, nodes)
	w.progress(200, 30*time.Second)
	w.finish(other.Addr)
}

// TestFaultFollowersKilled kills both followers of partition 0's leader: acks=all
// produce is refused with NOT_ENOUGH_REPLICAS while one replica is left, and nothing
// acknowledged is lost when they return.
//
// The cluster has five nodes: every node holds an etcd member, so with three nodes,
// two dead ones would also take etcd's quorum, and a broker without quorum cannot
// keep its session and stops leading (NOT_LEADER_OR_FOLLOWER) rather than refusing
// with NOT_ENOUGH_REPLICAS.
func TestFaultFollowersKilled(t *testing.T) {
	nodes := startFaultClusterOf(t, 5)
	w := startWorkload(t, nodes)
	w.progress(500, 30*time.Second)
	leader := leaderOf(t, nodes, 0)
	md, err := metadata(t, leader.Addr, faultTopic)
	if err != nil {
		t.Fatal(err)
	}
	var followers []*testnode.Node
	for _, id := range md.Topics[faultTopic].Partitions[0].Replicas {
		for _, n := range nodes {
			if n.ID == id && n != leader {
				n.Kill()
				followers = append(followers, n)
			}
		}
	}
	// A raw acks=all produce shows the broker's answer without the client's retries.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := newClient(t, leader.Addr)
	probes := 0
	poll(t, 30*time.Second, "NOT_ENOUGH_REPLICAS for acks=all", func() bool {
		probes++ // each probe its own value: ones sent before the ISR shrank may be in the log
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 2000
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: faultTopic, Partitions: []kmsg.ProduceRequestTopicPartition{
			{Partition: 0, Records: batchtest.Strings(batchtest.Plain, time.Now().UnixMilli(), fmt.Sprintf("zzz-probe-%d", probes))}}}}
		resp, err := cl.Request(ctx, req)
		if err != nil {
			return false
		}
		code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
		return code == kerr.NotEnoughReplicas.Code
	})
	for _, f := range followers {
		f.Restart()
	}
	waitFullISR(t, nodes)
	w.progress(300, 60*time.Second)
	w.finish(leader.Addr)
}

// TestFaultFollowerWiped deletes a follower's storage (its partition data and Pebble;
// its identity and etcd member stay): restarted, it copies the logs from the leaders
// and rejoins every ISR.
func TestFaultFollowerWiped(t *testing.T) { wipedFault(t, false) }

// TestFaultLeaderWiped does the same to the leader of partition 0, restarting it at
// once, before its session could expire: its new registration must not lead with an
// empty log (its followers would truncate to it); another in-sync replica takes over
// and the wiped broker copies everything back as a follower.
func TestFaultLeaderWiped(t *testing.T) { wipedFault(t, true) }

func wipedFault(t *testing.T, leaderToo bool) {
	nodes := startFaultCluster(t)
	w := startWorkload(t, nodes)
	w.progress(2000, 30*time.Second)
	leader := leaderOf(t, nodes, 0)
	victim := leader
	if !leaderToo {
		for _, n := range nodes {
			if n != leader {
				victim = n
			}
		}
	}
	victim.Kill()
	victim.WipeStorage(t)
	victim.Restart()
	waitFullISR(t, nodes)
	w.progress(300, 60*time.Second)
	w.finish(anyRunning(nodes, nil).Addr)
}
