package e2e

// Faults during the exactly-once pipeline (internal/eos): SIGKILL of the
// transaction coordinator's node, of a data partition's leader, and of a group
// member's process; SIGSTOP of the transaction coordinator's node for longer than
// the session timeout; a network partition cutting off an output partition's
// leader. The checker must still find every input in the output exactly once, no
// aborted read, and the committed offsets at the input's end.
//
// The coordinator kill, the network partition and the member kill run on clusters
// serving transaction version 2 (eosTV2Args), whose members must use it; the
// coordinator pause and the leader kill stay on version 1, so both are covered
// without running every fault twice.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/cluster"
	"skiff/internal/eos"
	"skiff/internal/testnode"
	"skiff/txn"
)

const eosFaultRecords = 3000

// runWithFault runs the pipeline on a 3-node cluster started with args (eosArgs or
// eosTV2Args) and calls fault once the group has committed a few transactions.
func runWithFault(t *testing.T, args []string, fault func(r *eosRun)) {
	runWithFaultOn(t, testnode.StartCluster(t, 3, args...), slices.Contains(args, "--transaction-version"), fault)
}

// runWithFaultOn is runWithFault on the cluster of nodes; with tv2 the members
// must use transaction version 2.
func runWithFaultOn(t *testing.T, nodes []*testnode.Node, tv2 bool, fault func(r *eosRun)) {
	r := newEOSRun(t, nodes, eosFaultRecords)
	r.pipe.MaxPoll = 50 // many small transactions, so the fault lands inside some
	var rc *requestCounter
	if tv2 {
		rc = r.countTV2()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- r.pipe.Run(ctx) }()
	poll(t, time.Minute, "a few committed transactions", func() bool { return committedTxns(r) >= 6 })
	fault(r)
	if err := <-errc; err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	r.check(ctx)
	if rc != nil {
		rc.wantTV2(t)
	}
}

// committedTxns counts the pipeline's committed transactions.
func committedTxns(r *eosRun) int {
	n := 0
	for _, tx := range r.pipe.Txns() {
		if tx.Outcome == eos.Committed {
			n++
		}
	}
	return n
}

// nodeByID returns the running node with broker id id.
func nodeByID(t *testing.T, nodes []*testnode.Node, id int32) *testnode.Node {
	t.Helper()
	for _, n := range nodes {
		if n.ID == id && n.Running() {
			return n
		}
	}
	t.Fatalf("no running node with id %d", id)
	return nil
}

// leaderID asks a live node for the leader of topic's partition p.
func leaderID(t *testing.T, nodes []*testnode.Node, topic string, p int32) int32 {
	t.Helper()
	var id int32 = -1
	poll(t, 30*time.Second, fmt.Sprintf("a leader of %s-%d", topic, p), func() bool {
		md, err := metadata(t, anyRunning(nodes, nil).Addr, topic)
		if err != nil {
			return false
		}
		pm, ok := md.Topics[topic].Partitions[p]
		id = pm.Leader
		return ok && id >= 0
	})
	return id
}

// TestEOSFaultCoordinatorKilled kills the transaction coordinator's node under
// transaction version 2: the new coordinator loads the log, where an Ongoing
// record may carry the previous transaction's completion, and writes its markers.
func TestEOSFaultCoordinatorKilled(t *testing.T) {
	runWithFault(t, eosTV2Args, func(r *eosRun) {
		id := fmt.Sprintf("%s-member-0", r.pipe.Group)
		p := txn.PartitionFor(id, txn.DefaultTopicPartitions)
		n := nodeByID(t, r.nodes, leaderID(t, r.nodes, cluster.TransactionTopic, p))
		t.Logf("killing node %d, the transaction coordinator of %s", n.ID, id)
		n.Kill()
	})
}

// minPause is the least time a test of a paused node keeps it frozen: three of
// faultArgs' session timeouts (2 s), and twice the share record lock of
// shareKillRun (3 s).
const minPause = 6 * time.Second

// TestEOSFaultCoordinatorPaused freezes the transaction coordinator's node
// (SIGSTOP) until another node leads its transaction-log partition and for at
// least minPause, then resumes it (SIGCONT) with the members' requests waiting in
// its sockets: the resumed node must not answer as the coordinator it was, nor
// fence or complete transactions from its stale state.
func TestEOSFaultCoordinatorPaused(t *testing.T) {
	runWithFault(t, eosArgs, func(r *eosRun) {
		id := fmt.Sprintf("%s-member-0", r.pipe.Group)
		p := txn.PartitionFor(id, txn.DefaultTopicPartitions)
		n := nodeByID(t, r.nodes, leaderID(t, r.nodes, cluster.TransactionTopic, p))
		t.Logf("freezing node %d, the transaction coordinator of %s", n.ID, id)
		if err := n.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		took := poll(t, time.Minute, "the transaction coordinator moved", func() bool {
			md, err := metadata(t, anyRunning(r.nodes, n).Addr, cluster.TransactionTopic)
			if err != nil {
				return false
			}
			l := md.Topics[cluster.TransactionTopic].Partitions[p].Leader
			return l >= 0 && l != n.ID
		})
		time.Sleep(minPause - took) // the fault lasts this long at least (no-op when negative)
		if err := n.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		t.Logf("resumed node %d; another node coordinated %s %v after the freeze", n.ID, id, took.Round(time.Millisecond))
	})
}

// TestEOSFaultLeaderPartitioned cuts the leader of an output partition off the
// network (internal/netlab) mid-pipeline until another node leads it and the
// pipeline has committed more transactions, then heals it: the transactions it was in abort or complete on the majority's side, and
// the old leader, rejoining, must not bring back anything the majority decided
// otherwise. Under transaction version 2: the new leader holds the batches of a
// bumped epoch until the previous transaction's marker comes over WriteTxnMarkers v2.
func TestEOSFaultLeaderPartitioned(t *testing.T) {
	nodes := startLabCluster(t, withArgs(eosTV2Args...))
	runWithFaultOn(t, nodes, true, func(r *eosRun) {
		n := nodeByID(t, r.nodes, leaderID(t, r.nodes, r.pipe.Output, 0))
		other := anyRunning(r.nodes, n)
		t.Logf("cutting off node %d, the leader of %s-0", n.ID, r.pipe.Output)
		n.Host.Cut()
		took := poll(t, time.Minute, "the output partition led on the majority side", func() bool {
			md, err := metadata(t, other.Addr, r.pipe.Output)
			if err != nil {
				return false
			}
			l := md.Topics[r.pipe.Output].Partitions[0].Leader
			return l >= 0 && l != n.ID
		})
		before := committedTxns(r)
		poll(t, time.Minute, "3 more committed transactions while cut off", func() bool { return committedTxns(r) >= before+3 })
		n.Host.Heal()
		t.Logf("healed node %d; the majority led %s-0 %v after the cut, and committed 3 more transactions", n.ID, r.pipe.Output, took.Round(time.Millisecond))
	})
}

func TestEOSFaultLeaderKilled(t *testing.T) {
	runWithFault(t, eosArgs, func(r *eosRun) {
		n := nodeByID(t, r.nodes, leaderID(t, r.nodes, r.pipe.Output, 0))
		t.Logf("killing node %d, the leader of %s-0", n.ID, r.pipe.Output)
		n.Kill()
	})
}

// TestEOSFaultMemberKilled runs the pipeline's third member in a process of its own
// (TestEOSMemberProcess) and kills it with SIGKILL mid-pipeline: the transaction it
// was in is aborted at its timeout, its partitions move to the other members, and
// the output still holds each input exactly once. Under transaction version 2 the
// timeout abort bumps the epoch twice.
func TestEOSFaultMemberKilled(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, eosTV2Args...)
	r := newEOSRun(t, nodes, eosFaultRecords)
	r.pipe.Members, r.pipe.MaxPoll = 2, 50
	rc := r.countTV2()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	cmd := exec.Command(os.Args[0], "-test.run=^TestEOSMemberProcess$")
	cfg, _ := json.Marshal(memberConfig{Seeds: nodeAddrs(nodes), Input: r.pipe.Input, Output: r.pipe.Output, Group: r.pipe.Group, Member: 2})
	cmd.Env = append(os.Environ(), "SKIFF_EOS_MEMBER="+string(cfg))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	journal := make(chan journalLine, 1024)
	go func() {
		defer close(journal)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var l journalLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				journal <- l
			}
		}
	}()
	errc := make(chan error, 1)
	go func() { errc <- r.pipe.Run(ctx) }()
	// Kill it inside a transaction, once it has ended a few.
	ended, open := 0, map[string]eos.Txn{}
	for l := range journal {
		if !l.Ended {
			open[l.Txn.ID] = l.Txn
			if ended >= 3 {
				cmd.Process.Kill()
				t.Logf("killed member 2 (pid %d) in transaction %s", cmd.Process.Pid, l.Txn.ID)
				break
			}
			continue
		}
		delete(open, l.Txn.ID)
		r.pipe.AddTxns(l.Txn)
		ended++
	}
	for l := range journal { // what it wrote before the kill
		if l.Ended {
			delete(open, l.Txn.ID)
			r.pipe.AddTxns(l.Txn)
		} else {
			open[l.Txn.ID] = l.Txn
		}
	}
	cmd.Wait()
	for _, tx := range open {
		r.pipe.AddTxns(tx) // outcome Unknown: all or nothing
	}
	if err := <-errc; err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	r.check(ctx)
	rc.wantTV2(t)
}

func nodeAddrs(nodes []*testnode.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Addr)
	}
	return out
}

type memberConfig struct {
	Seeds                []string
	Input, Output, Group string
	Member               int
}

type journalLine struct {
	Txn   eos.Txn
	Ended bool
}

// TestEOSMemberProcess is the member process of TestEOSFaultMemberKilled; it does
// nothing unless SKIFF_EOS_MEMBER holds its configuration. It writes its journal
// to stdout, one JSON line per transaction begun and ended.
func TestEOSMemberProcess(t *testing.T) {
	v := os.Getenv("SKIFF_EOS_MEMBER")
	if v == "" {
		t.Skip("the member process of TestEOSFaultMemberKilled")
	}
	var cfg memberConfig
	if err := json.Unmarshal([]byte(v), &cfg); err != nil {
		t.Fatal(err)
	}
	p := &eos.Pipeline{Opts: []kgo.Opt{kgo.SeedBrokers(cfg.Seeds...)}, Input: cfg.Input, Output: cfg.Output, Group: cfg.Group, MaxPoll: 50,
		Journal: func(tx eos.Txn, ended bool) {
			b, _ := json.Marshal(journalLine{Txn: tx, Ended: ended})
			os.Stdout.Write(append(b, '\n'))
		}}
	if err := p.RunMember(context.Background(), cfg.Member); err != nil {
		t.Fatal(err)
	}
}
