package e2e

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/netlab"
	"skiff/internal/testnode"
)

// startLabCluster starts three nodes, each on its own host of a network lab (network
// namespaces: in 10.77.0.0/24, which exists only inside them), with args(host) as each
// node's extra arguments; the lab's fourth host is the client's, through which
// clientOpts dial for the rest of the test. It skips the test where network
// namespaces cannot be made (they need root; CI runs as root).
func startLabCluster(t *testing.T, args func(h *netlab.Host) []string) []*testnode.Node {
	t.Helper()
	if why := netlab.Available(); why != "" {
		t.Skipf("skipping the network partition test: %s", why)
	}
	lab := netlab.New(t, 4)
	client := lab.Host(4)
	labDial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		// A custom dialer replaces kgo.DialTimeout: without a bound, a dial to the
		// cut-off node retries its SYN for minutes and stalls the client meanwhile.
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return client.DialContext(ctx, network, addr)
	}
	clientOpts = []kgo.Opt{kgo.Dialer(labDial)}
	t.Cleanup(func() { clientOpts, labDial = nil, nil })

	var nodes []*testnode.Node
	for i := 1; i <= 3; i++ {
		a := args(lab.Host(i))
		if i > 1 {
			a = append(a, "--join", nodes[0].EtcdClient)
		}
		n := testnode.NewIn(t, lab.Host(i), a...)
		n.Restart()
		nodes = append(nodes, n)
	}
	waitBrokers(t, len(nodes), nodes...)
	return nodes
}

// labDial, while a lab test runs, dials from the lab's client host (for HTTP).
var labDial func(ctx context.Context, network, addr string) (net.Conn, error)

// withArgs is an args function of startLabCluster: the same arguments on every host.
func withArgs(args ...string) func(*netlab.Host) []string {
	return func(*netlab.Host) []string { return append([]string(nil), args...) }
}

// TestFaultLeaderPartitioned cuts the leader of partition 0 off the network: the
// majority elects a new leader and keeps serving; the isolated node loses its session
// and stops leading; healed, it rejoins as a follower; the history holds.
func TestFaultLeaderPartitioned(t *testing.T) {
	nodes := startLabCluster(t, withArgs(faultArgs...))
	setUpFaultTopic(t, nodes)
	w := startWorkload(t, nodes)
	w.progress(500, 30*time.Second)

	leader := leaderOf(t, nodes, 0)
	start := time.Now()
	leader.Host.Cut()
	other := anyRunning(nodes, leader)
	poll(t, 30*time.Second, "partition 0 led on the majority side", func() bool {
		md, err := metadata(t, other.Addr, faultTopic)
		l := int32(-1)
		if err == nil {
			l = md.Topics[faultTopic].Partitions[0].Leader
		}
		return l >= 0 && l != leader.ID
	})
	w.progress(300, 60*time.Second)
	t.Logf("leader %d cut off; the majority took over and acknowledged 300 more records within %v", leader.ID, time.Since(start))
	leader.Host.Heal()
	waitFullISR(t, nodes)
	w.progress(200, 30*time.Second)
	w.finish(other.Addr)
	checkCutOffLogs(t, leader, time.Since(start))
}

// checkCutOffLogs: a node that was cut off for about d said so once in its own
// words and that its session came back, logged the etcd client's warning for
// each failed attempt of a request (every 25 ms without an etcd leader) at most
// once per 10 s (embedetcd's repeatEvery), and of its failed session renewals
// (one every third of the session timeout) only the first of each run.
func checkCutOffLogs(t *testing.T, n *testnode.Node, d time.Duration) {
	t.Helper()
	poll(t, 30*time.Second, "the cut-off node's session confirmed or restored", func() bool {
		logs := n.Logs()
		return strings.Contains(logs, `"msg":"broker session confirmed"`) || strings.Contains(logs, `"msg":"broker session restored"`)
	})
	logs := n.Logs()
	retries := strings.Count(logs, `"level":"WARN","msg":"retrying of unary invoker failed"`)
	doubts := strings.Count(logs, `"msg":"broker session in doubt`)
	renewals := strings.Count(logs, `"level":"INFO","msg":"renewing the broker session failed"`)
	if limit := 2 + int(d/(10*time.Second)); retries > limit || doubts < 1 || renewals > 3 {
		t.Errorf("cut off for %v: %d etcd retry warnings (at most %d), %d session doubts, %d failed renewals at info (at most 3)",
			d.Round(time.Second), retries, limit, doubts, renewals)
	}
	t.Logf("cut off for %v: %d etcd retry warnings, %d session doubts, %d failed renewals at info", d.Round(time.Second), retries, doubts, renewals)
}
