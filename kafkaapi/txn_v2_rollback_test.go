package kafkaapi_test

// Going back from transaction version 2 to 1 (docs/operations.md,
// "Transaction version 2"): a partition leader restarted at 1 still takes the
// WriteTxnMarkers v2 of the TV2 transactions its coordinator is finishing.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rollback is three nodes at transaction version 2 and two franz-go
// producers (TV2: Produce v12, no AddPartitionsToTxn) whose transactions,
// both open, interleave on a partition led by node b; their coordinator is
// node coord.
type rollback struct {
	tc                 *txnCluster
	coord, b           int // indexes into tc.nodes
	topic              string
	part               int32
	rc                 requestCounter
	ids                [2]string // the committer's and the aborter's
	committer, aborter *kgo.Client
	want               []string // the committer's records
}

func startRollback(t *testing.T, ctx context.Context, name string) *rollback {
	t.Helper()
	r := &rollback{tc: newTxnCluster(t, name, 2, 2, 2)}
	tc := r.tc
	c0 := dial(t, tc.nodes[0].KafkaAddr())
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(1)
	fc.CoordinatorKey, fc.CoordinatorType = topicName(t, "id"), 1
	coordID := findTxnCoordinator(t, c0, fc).NodeID // creates __transaction_state
	index := map[int32]int{}
	for i, n := range tc.nodes {
		index[n.ID()] = i
	}
	var ok bool
	if r.coord, ok = index[coordID]; !ok {
		t.Fatalf("coordinator %d is none of the nodes", coordID)
	}
	coord := dial(t, tc.nodes[r.coord].KafkaAddr())

	// A partition led by a node other than the coordinator: b.
	r.topic = topicName(t, "")
	createTopic(t, c0, r.topic, 3, nil) // one replica: the partition waits for b
	waitFor(t, 30*time.Second, "a partition led by a node other than the coordinator", func() bool {
		for _, p := range metadataTopic(t, c0, r.topic).Partitions {
			if i, ok := index[p.Leader]; ok && p.ErrorCode == 0 && p.Leader != coordID {
				r.part, r.b = p.Partition, i
				return true
			}
		}
		return false
	})
	t.Logf("coordinator on broker %d, %s-%d led by broker %d", coordID, r.topic, r.part, tc.nodes[r.b].ID())

	var seeds []string
	for i, n := range tc.nodes {
		if i != r.b {
			seeds = append(seeds, n.KafkaAddr())
		}
	}
	producer := func(id string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.Dialer(r.rc.dial), kgo.TransactionalID(id),
			kgo.TransactionTimeout(time.Minute), kgo.DefaultProduceTopic(r.topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		if _, _, err := cl.ProducerID(ctx); err != nil { // met a broker: TV2 from the first transaction
			t.Fatal(err)
		}
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		return cl
	}
	for i := range r.ids {
		r.ids[i] = txnIDCoordinatedOn(t, coord, coordID)
	}
	r.committer, r.aborter = producer(r.ids[0]), producer(r.ids[1])
	for i, cl := range []*kgo.Client{r.aborter, r.committer, r.aborter, r.committer, r.committer} {
		v := fmt.Sprintf("aborted-%d", i)
		if cl == r.committer {
			v = fmt.Sprintf("committed-%d", i)
			r.want = append(r.want, v)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: r.part, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	if n, added := r.rc.count(0, 12), r.rc.count(24, -1); n == 0 || added != 0 {
		t.Fatalf("Produce v12 sent %d times, AddPartitionsToTxn %d: the producers are not at transaction version 2", n, added)
	}
	return r
}

// end ends cl's transaction with EndTxn v5.
func (r *rollback) end(t *testing.T, ctx context.Context, cl *kgo.Client, commit bool) {
	t.Helper()
	before := r.rc.count(26, 5)
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end the transaction (commit %v): %v", commit, err)
	}
	if n := r.rc.count(26, 5); n != before+1 {
		t.Fatalf("EndTxn v5 sent %d times, want %d", n, before+1)
	}
}

// restartAtV1 starts node b again at transaction version 1, and waits until
// it leads the partition.
func (r *rollback) restartAtV1(t *testing.T) *kconn {
	t.Helper()
	cb := dial(t, r.tc.start(r.b, 1).KafkaAddr())
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	for _, k := range cb.do(av).(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == 27 && k.MaxVersion != 1 {
			t.Fatalf("restarted broker advertises WriteTxnMarkers up to v%d: not at transaction version 1", k.MaxVersion)
		}
	}
	waitFor(t, 20*time.Second, "the restarted broker to lead the partition", func() bool {
		return listOffsetsAt(t, cb, 5, r.topic, r.part, -1).ErrorCode != kerr.NotLeaderForPartition.Code
	})
	return cb
}

// check waits until no transaction is open on the partition (both markers
// written), then reads it read_committed: a fetch and a franz-go consumer see
// exactly the committed records, once, in order.
func (r *rollback) check(t *testing.T, ctx context.Context, cb *kconn) {
	t.Helper()
	settled(t, cb, r.topic, r.part)
	if got := readCommitted(t, cb, r.topic, r.part); !slices.Equal(got, r.want) {
		t.Fatalf("read_committed fetch %q, want %q", got, r.want)
	}
	// The first record is aborted: a consumer that read it stops short of the last.
	got := consumeAll(ctx, t, r.tc.nodes[r.b].KafkaAddr(), r.topic, kgo.ReadCommitted(), len(r.want))
	if !slices.Equal(got, r.want) {
		t.Fatalf("read_committed consumer %q, want %q", got, r.want)
	}
}

// TestTxnV2RollbackMarkers: of two TV2 transactions on a partition led by
// node b (coordinator elsewhere), one commits while b is stopped (its markers
// wait for it), then b starts again at transaction version 1 on its data
// directory and the other aborts. The coordinator's WriteTxnMarkers v2 of both
// reach b: its last stable offset moves to its log end and read_committed
// reads exactly the committed records. Without b serving v2 at 1 both markers
// are refused (UNSUPPORTED_VERSION) and retried for ever.
func TestTxnV2RollbackMarkers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := startRollback(t, ctx, "rollback")
	r.tc.stop(r.b)
	r.end(t, ctx, r.committer, true)
	cb := r.restartAtV1(t)
	r.end(t, ctx, r.aborter, false)
	r.check(t, ctx, cb)
}

// TestTxnV2RollbackCoordinatorGone: both TV2 transactions end (EndTxn v5, one
// commit, one abort) while their partition's leader b is stopped; then their
// coordinator stops too, its markers not written, and b starts again at
// transaction version 1. The third node takes over __transaction_state's
// partition (b left its ISR when it stopped), loads both decisions and
// finishes them with WriteTxnMarkers v2 to b: nothing aborted is read, every
// committed record once. For a moment one node of three runs: etcd has no
// quorum until b is back.
func TestTxnV2RollbackCoordinatorGone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := startRollback(t, ctx, "rollbackgone")
	other := 3 - r.coord - r.b // the third node
	r.tc.stop(r.b)
	r.end(t, ctx, r.committer, true)
	r.end(t, ctx, r.aborter, false)
	coord := dial(t, r.tc.nodes[r.coord].KafkaAddr())
	for i, want := range []string{"PrepareCommit", "PrepareAbort"} {
		if st := describeTxnID(t, coord, r.ids[i]); st.State != want {
			t.Fatalf("transaction %s %s before the coordinator stops, want %s (markers waiting for the leader)", r.ids[i], st.State, want)
		}
	}
	r.tc.stop(r.coord)
	cb := r.restartAtV1(t)
	co := dial(t, r.tc.nodes[other].KafkaAddr())
	for i, want := range []string{"CompleteCommit", "CompleteAbort"} {
		waitFor(t, 20*time.Second, fmt.Sprintf("the third node to complete %s", r.ids[i]), func() bool {
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.SetVersion(1)
			fc.CoordinatorKey, fc.CoordinatorType = r.ids[i], 1
			resp := co.do(fc).(*kmsg.FindCoordinatorResponse)
			return resp.ErrorCode == 0 && resp.NodeID == r.tc.nodes[other].ID() && describeTxnID(t, co, r.ids[i]).State == want
		})
	}
	r.check(t, ctx, cb)
}

// describeTxnID returns what the broker on c holds of transactional id.
func describeTxnID(t *testing.T, c *kconn, id string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp := c.do(req).(*kmsg.DescribeTransactionsResponse)
	if len(resp.TransactionStates) != 1 {
		t.Fatalf("DescribeTransactions answer %+v", resp.TransactionStates)
	}
	return resp.TransactionStates[0]
}
