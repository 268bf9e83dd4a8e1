package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/eos"
	"skiff/internal/testnode"
)

// eosArgs make the group rebalance without the initial delay, so members join fast.
var eosArgs = append([]string{"--group-initial-rebalance-delay", "0"}, faultArgs...)

// eosRun is one run of the consume-transform-produce pipeline on a cluster.
type eosRun struct {
	t      testing.TB
	nodes  []*testnode.Node
	opts   []kgo.Opt
	pipe   *eos.Pipeline
	inputs []string
}

// newEOSRun creates input and output topics (3 partitions, RF 3,
// min.insync.replicas 2) and produces records inputs.
func newEOSRun(t testing.TB, nodes []*testnode.Node, records int) *eosRun {
	t.Helper()
	name := fmt.Sprintf("eos-%d", time.Now().UnixNano())
	r := &eosRun{t: t, nodes: nodes, opts: append([]kgo.Opt{seeds(nodes)}, clientOpts...)}
	r.pipe = &eos.Pipeline{Opts: r.opts, Input: name + "-in", Output: name + "-out", Group: name, Members: 3, AbortEvery: 4, MaxPoll: 100,
		Logf: func(f string, args ...any) { t.Logf(f, args...) }}
	for _, topic := range []string{r.pipe.Input, r.pipe.Output} {
		createTopicWith(t, nodes[0].Addr, topic, 3, 3, map[string]string{"min.insync.replicas": "2"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var err error
	if r.inputs, err = eos.ProduceInputs(ctx, r.opts, r.pipe.Input, records); err != nil {
		t.Fatalf("produce inputs: %v", err)
	}
	return r
}

// check runs the checker over the history and the output, and checks that the
// group's committed offsets are the input's end offsets.
func (r *eosRun) check(ctx context.Context) {
	t := r.t
	t.Helper()
	reads, err := eos.ReadOutput(ctx, r.opts, r.pipe.Output, 3)
	if err != nil {
		t.Fatalf("read output: %v", err)
	}
	res := eos.Check(r.pipe.Txns(), reads, r.inputs)
	if !res.Ok() {
		t.Fatalf("exactly-once violated: %v", res)
	}
	cl, err := kgo.NewClient(r.opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, r.pipe.Input)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(ctx, r.pipe.Group)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		if c, _ := committed.Lookup(e.Topic, e.Partition); c.At != e.Offset {
			t.Errorf("partition %d: committed offset %d, input end %d", e.Partition, c.At, e.Offset)
		}
	})
	aborted := 0
	for _, tx := range r.pipe.Txns() {
		if tx.Outcome == eos.Aborted {
			aborted++
		}
	}
	t.Logf("eos: %d inputs, %d transactions (%d aborted), %v", len(r.inputs), len(r.pipe.Txns()), aborted, res)
}

// TestEOSPipeline runs franz-go's GroupTransactSession with 3 members from one
// topic to another on a 3-node cluster, aborting some transactions on purpose:
// every input is in the output exactly once, no aborted record is read, and the
// committed offsets are the input's end.
func TestEOSPipeline(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, eosArgs...)
	r := newEOSRun(t, nodes, 3000)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := r.pipe.Run(ctx); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	r.check(ctx)
}

// BenchmarkEOSPipeline runs the pipeline over SKIFF_EOS_RECORDS records (default
// 10,000; the run is 1,000,000) and reports records per second.
func BenchmarkEOSPipeline(b *testing.B) {
	records := 10000
	if v, err := strconv.Atoi(os.Getenv("SKIFF_EOS_RECORDS")); err == nil && v > 0 {
		records = v
	}
	nodes := testnode.StartCluster(b, 3, eosArgs...)
	for range b.N {
		r := newEOSRun(b, nodes, records)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
		start := time.Now()
		if err := r.pipe.Run(ctx); err != nil {
			b.Fatalf("pipeline: %v", err)
		}
		b.ReportMetric(float64(records)/time.Since(start).Seconds(), "records/s")
		r.check(ctx)
		cancel()
	}
}
