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

// TestTxnV2RollbackMarkers: three nodes at transaction version 2; two
// franz-go producers (TV2: Produce v12, no AddPartitionsToTxn) interleave
// transactions on a partition led by node B, whose coordinator is another node.
// B stops; one producer commits (EndTxn v5: the markers wait for B); B starts
// again at transaction version 1 on its data directory; the other producer
// aborts. The coordinator's WriteTxnMarkers v2 of both reach B: its last
// stable offset moves to its log end and a read_committed consumer reads
// exactly the committed records. Without B serving v2 at 1, both markers are
// refused (UNSUPPORTED_VERSION) and retried for ever.
func TestTxnV2RollbackMarkers(t *testing.T) {
	tc := newTxnCluster(t, "rollback", 2, 2, 2)
	c0 := dial(t, tc.nodes[0].KafkaAddr())
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(1)
	fc.CoordinatorKey, fc.CoordinatorType = topicName(t, "id"), 1
	coordID := findTxnCoordinator(t, c0, fc).NodeID // creates __transaction_state
	index := map[int32]int{}
	for i, n := range tc.nodes {
		index[n.ID()] = i
	}
	coordIdx, ok := index[coordID]
	if !ok {
		t.Fatalf("coordinator %d is none of the nodes", coordID)
	}
	coord := dial(t, tc.nodes[coordIdx].KafkaAddr())

	// A partition led by a node other than the coordinator: B.
	topic := topicName(t, "")
	createTopic(t, c0, topic, 3, nil) // one replica: the partition waits for B
	part, b := int32(-1), -1
	waitFor(t, 30*time.Second, "a partition led by a node other than the coordinator", func() bool {
		for _, p := range metadataTopic(t, c0, topic).Partitions {
			if i, ok := index[p.Leader]; ok && p.ErrorCode == 0 && p.Leader != coordID {
				part, b = p.Partition, i
				return true
			}
		}
		return false
	})
	t.Logf("coordinator on broker %d, %s-%d led by broker %d", coordID, topic, part, tc.nodes[b].ID())

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var seeds []string
	for i, n := range tc.nodes {
		if i != b {
			seeds = append(seeds, n.KafkaAddr())
		}
	}
	var rc requestCounter
	producer := func() *kgo.Client {
		id := newTV2Producer(t, coord, coordID).id // an id coordinated there
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.Dialer(rc.dial), kgo.TransactionalID(id),
			kgo.TransactionTimeout(time.Minute), kgo.DefaultProduceTopic(topic),
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
	committer, aborter := producer(), producer()
	var want []string
	for i, cl := range []*kgo.Client{aborter, committer, aborter, committer, committer} {
		v := fmt.Sprintf("aborted-%d", i)
		if cl == committer {
			v = fmt.Sprintf("committed-%d", i)
			want = append(want, v)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: part, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	if n, added := rc.count(0, 12), rc.count(24, -1); n == 0 || added != 0 {
		t.Fatalf("Produce v12 sent %d times, AddPartitionsToTxn %d: the producers are not at transaction version 2", n, added)
	}

	// B stops; the commit's markers wait for it.
	tc.stop(b)
	if err := committer.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit with the leader stopped: %v", err)
	}
	if n := rc.count(26, 5); n != 1 {
		t.Fatalf("EndTxn v5 sent %d times, want 1", n)
	}
	// B back at transaction version 1.
	cb := dial(t, tc.start(b, 1).KafkaAddr())
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	for _, k := range cb.do(av).(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == 27 && k.MaxVersion != 1 {
			t.Fatalf("restarted broker advertises WriteTxnMarkers up to v%d: not at transaction version 1", k.MaxVersion)
		}
	}
	waitFor(t, 20*time.Second, "the restarted broker to lead the partition", func() bool {
		return listOffsetsAt(t, cb, 5, topic, part, -1).ErrorCode != kerr.NotLeaderForPartition.Code
	})
	if err := aborter.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("abort with the leader at transaction version 1: %v", err)
	}
	if n := rc.count(26, 5); n != 2 {
		t.Fatalf("EndTxn v5 sent %d times, want 2", n)
	}

	settled(t, cb, topic, part)
	if got := readCommitted(t, cb, topic, part); !slices.Equal(got, want) {
		t.Fatalf("read_committed fetch %q, want %q", got, want)
	}
	got := consumeAll(ctx, t, tc.nodes[b].KafkaAddr(), topic, kgo.ReadCommitted(), len(want))
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed consumer %q, want %q", got, want)
	}
}
