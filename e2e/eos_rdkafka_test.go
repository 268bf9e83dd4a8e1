package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/eos"
	"skiff/internal/testnode"
)

// TestLibrdkafkaTransactions runs librdkafka's transactional producer (Debian's
// python3-confluent-kafka, testdata/rdkafka_txn.py): init_transactions, commit and
// abort, and consume-transform-produce with send_offsets_to_transaction, aborting
// every third transaction. Its read_committed reader must see the committed records
// only, each input once, and the group's committed offsets must be the input's end.
// The node serves transaction version 2, which librdkafka never uses (no EndTxn
// v5): a TV2 cluster must serve TV1 clients, here beside a franz-go pipeline that
// uses TV2 (kgoPipelineBeside).
func TestLibrdkafkaTransactions(t *testing.T) {
	if out, err := exec.Command(python3, "-c", "import confluent_kafka").CombinedOutput(); err != nil {
		t.Fatalf("librdkafka for Python not found: install Debian's python3-confluent-kafka (make test does): %v\n%s", err, out)
	}
	n := testnode.Start(t, "--group-initial-rebalance-delay", "0", "--transaction-version", "2")
	beside := kgoPipelineBeside(t, n)
	in, out, group := "rdk-in", "rdk-out", "rdk-group"
	createTopic(t, n.Addr, in, 1)
	createTopic(t, n.Addr, out, 1)
	const count = 300
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := newClient(t, n.Addr, kgo.DefaultProduceTopic(in))
	var want []string
	for i := range count {
		v := fmt.Sprintf("%04d", i)
		want = append(want, "t:"+v)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(ctx, python3, "testdata/rdkafka_txn.py", n.Addr, in, out, group, fmt.Sprint(count))
	stdout, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("rdkafka_txn.py: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	var read []string
	for _, line := range strings.Split(strings.TrimSpace(string(stdout)), "\n") {
		if v, ok := strings.CutPrefix(line, "read "); ok {
			read = append(read, v)
		}
	}
	want = append([]string{"c1", "c2"}, want...)
	if !slices.Equal(read, want) {
		t.Fatalf("read_committed read %d records, want %d (c1 c2 then each input once, in order); first difference at %d\n%s",
			len(read), len(want), firstDiff(read, want), stdout)
	}
	adm := kadm.NewClient(cl)
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := committed.Lookup(in, 0); o.At != count {
		t.Fatalf("group committed %d, want %d", o.At, count)
	}
	beside()
}

// kgoPipelineBeside starts an exactly-once pipeline of franz-go members on node
// n, on topics of its own, and returns the function that waits for it to finish,
// checks its history and checks that its members used transaction version 2.
func kgoPipelineBeside(t *testing.T, n *testnode.Node) func() {
	t.Helper()
	rc := &requestCounter{}
	opts := []kgo.Opt{kgo.SeedBrokers(n.Addr)}
	pipe := &eos.Pipeline{Opts: opts, MemberOpts: []kgo.Opt{rc.opt()}, Input: "kgo-in", Output: "kgo-out", Group: "kgo-group",
		Members: 2, AbortEvery: 3, MaxPoll: 50, Logf: func(f string, args ...any) { t.Logf(f, args...) }}
	createTopic(t, n.Addr, pipe.Input, 2)
	createTopic(t, n.Addr, pipe.Output, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	inputs, err := eos.ProduceInputs(ctx, opts, pipe.Input, 600)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	finished := make(chan struct{})
	var runErr error
	go func() {
		defer close(finished)
		runErr = pipe.Run(ctx)
	}()
	t.Cleanup(func() { // also when the test fails first: no Logf after it ends
		cancel()
		<-finished
	})
	return func() {
		t.Helper()
		<-finished
		if runErr != nil {
			t.Fatalf("franz-go pipeline: %v", runErr)
		}
		reads, err := eos.ReadOutput(ctx, opts, pipe.Output, 2)
		if err != nil {
			t.Fatal(err)
		}
		if res := eos.Check(pipe.Txns(), reads, inputs); !res.Ok() {
			t.Fatalf("franz-go pipeline: exactly-once violated: %v", res)
		}
		rc.wantTV2(t)
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
