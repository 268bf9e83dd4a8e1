package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"skiff/internal/testnode"
)

// clusterArgs make failure detection fast for tests: a 2 s session and a
// preferred-leader rebalance every second.
var clusterArgs = []string{"--session-timeout", "2s", "--leader-imbalance-check-interval", "1s"}

// poll calls cond until it holds or the deadline passes, and returns how long it took.
func poll(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(50 * time.Millisecond) // polling interval of a condition with a deadline
	}
	return time.Since(start)
}

func metadata(t *testing.T, addr string, topics ...string) (kadm.Metadata, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return kadm.NewClient(newClient(t, addr)).Metadata(ctx, topics...)
}

// TestControllerFailover kills the controller: another node becomes controller within
// the session timeout and topics can still be created; the partitions of the dead node
// (RF 1) are offline until it returns, and then it leads them again.
func TestControllerFailover(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, clusterArgs...)
	byID := map[int32]*testnode.Node{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, nodes[0].Addr))
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "before"); err != nil {
		t.Fatal(err)
	}
	md, err := metadata(t, nodes[0].Addr, "before")
	if err != nil {
		t.Fatal(err)
	}
	ctrl := byID[md.Controller]
	if ctrl == nil {
		t.Fatalf("controller %d is not one of the nodes", md.Controller)
	}
	var survivor *testnode.Node
	for _, n := range nodes {
		if n != ctrl {
			survivor = n
		}
	}
	ctrl.Kill()
	took := poll(t, 30*time.Second, "a new controller", func() bool {
		md, err := metadata(t, survivor.Addr)
		return err == nil && md.Controller != ctrl.ID && md.Controller > 0 && len(md.Brokers) == 2
	})
	t.Logf("new controller elected %v after the old one was killed (session timeout 2 s)", took)

	resp, err := kadm.NewClient(newClient(t, survivor.Addr)).CreateTopic(ctx, 4, 1, nil, "after")
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic without the old controller: %v %v", err, resp.Err)
	}
	md, err = metadata(t, survivor.Addr, "before", "after")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range md.Topics["after"].Partitions {
		if p.Leader == ctrl.ID || p.Leader < 0 {
			t.Fatalf("new topic's partition %d led by %d", p.Partition, p.Leader)
		}
	}
	offline := 0
	for _, p := range md.Topics["before"].Partitions {
		if p.Replicas[0] == ctrl.ID {
			offline++
			if p.Leader != -1 {
				t.Fatalf("partition %d of the dead node has leader %d", p.Partition, p.Leader)
			}
		}
	}
	if offline == 0 {
		t.Fatal("the killed node held no partition of the topic")
	}

	ctrl.Restart()
	took = poll(t, 30*time.Second, "the restarted node leads its partitions again", func() bool {
		md, err := metadata(t, survivor.Addr, "before")
		if err != nil {
			return false
		}
		for _, p := range md.Topics["before"].Partitions {
			if p.Leader != p.Replicas[0] {
				return false
			}
		}
		return true
	})
	t.Logf("restarted node led its partitions again %v after it was ready", took)
}

// TestQuorumLoss kills two nodes of three: the survivor says it is not ready, refuses
// metadata changes with a clear error, and recovers when one node returns.
func TestQuorumLoss(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, clusterArgs...)
	nodes[1].Kill()
	nodes[2].Kill()
	survivor := nodes[0]
	poll(t, 30*time.Second, "/readyz reports not ready", func() bool {
		resp, err := http.Get("http://" + survivor.HTTPAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := newClient(t, survivor.Addr)
	req := kadmCreate("refused", 3000)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Topics[0]
	if r.ErrorCode == 0 || r.ErrorMessage == nil {
		t.Fatalf("create topic without quorum: error %d, message %v", r.ErrorCode, r.ErrorMessage)
	}
	t.Logf("create topic without quorum: error %d: %s", r.ErrorCode, *r.ErrorMessage)

	nodes[1].Restart()
	poll(t, 60*time.Second, "/readyz reports ready again", func() bool {
		resp, err := http.Get("http://" + survivor.HTTPAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if resp, err := kadm.NewClient(newClient(t, survivor.Addr)).CreateTopic(ctx, 1, 1, nil, "accepted"); err != nil || resp.Err != nil {
		t.Fatalf("create topic with quorum back: %v %v", err, resp.Err)
	}
}
