package e2e

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/cluster"
	"skiff/internal/eos"
	"skiff/internal/testnode"
	"skiff/txn"
)

// TestTxnV2CoordinatorKilledCarrying kills the transaction coordinator with a
// completion carried in its log (docs/design/txn-v2.md §3): a TV2 transaction
// commits across partition 0, led by a frozen node X, and partition 1; before
// its marker can reach X, the producer's next transaction adds partition 1, so
// its Ongoing record carries the first one's completion. The coordinator C is
// then killed and X resumed: the other replica of the coordinator's partition
// loads the record and writes the missing marker (or X finds C's stale request
// in its socket; the marker's epoch makes either safe). read_committed must
// then read the first transaction on both partitions, and the id goes on.
func TestTxnV2CoordinatorKilledCarrying(t *testing.T) {
	// __transaction_state on two replicas, so that a node outside the id's
	// partition can be frozen without stalling its commits.
	nodes := testnode.StartCluster(t, 3, append([]string{"--transaction-state-log-replication-factor", "2"}, eosTV2Args...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, topic := "carry-id", "carry"
	opts := append([]kgo.Opt{seeds(nodes)}, clientOpts...)
	rc := &requestCounter{}
	producer := func() *kgo.Client {
		cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), opts...), kgo.TransactionalID(id),
			kgo.TransactionTimeout(10*time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()), rc.opt())...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		// InitProducerId first: franz-go chooses TV2 at BeginTransaction only
		// once it has read a broker's ApiVersions.
		if _, _, err := cl.ProducerID(ctx); err != nil {
			t.Fatal(err)
		}
		return cl
	}
	p := producer()

	// C leads the id's partition of __transaction_state, Y follows it, X is the third.
	part := txn.PartitionFor(id, txn.DefaultTopicPartitions)
	md, err := metadata(t, nodes[0].Addr, cluster.TransactionTopic)
	if err != nil {
		t.Fatal(err)
	}
	pm := md.Topics[cluster.TransactionTopic].Partitions[part]
	if len(pm.Replicas) != 2 {
		t.Fatalf("%s-%d has replicas %v, want 2", cluster.TransactionTopic, part, pm.Replicas)
	}
	c := nodeByID(t, nodes, pm.Leader)
	y := nodeByID(t, nodes, pm.Replicas[0])
	if y == c {
		y = nodeByID(t, nodes, pm.Replicas[1])
	}
	var x *testnode.Node
	for _, n := range nodes {
		if n != c && n != y {
			x = n
		}
	}
	createPlaced(t, ctx, p, topic, []int32{x.ID}, []int32{y.ID})
	t.Logf("coordinator %d, its follower %d; partition 0 on %d, partition 1 on %d", c.ID, y.ID, x.ID, y.ID)

	var txns []eos.Txn
	var inputs []string
	// transaction writes one record to each of partitions, and ends it.
	transaction := func(cl *kgo.Client, name string, partitions []int32, before func()) error {
		tx := eos.Txn{ID: name, Outcome: eos.Unknown}
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, pt := range partitions {
			r := eos.Record{Input: fmt.Sprintf("%s-%d", name, pt), Txn: name}
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: pt, Value: []byte(r.String())}).FirstErr(); err != nil {
				t.Fatalf("%s: produce to partition %d: %v", name, pt, err)
			}
			tx.Records = append(tx.Records, r)
		}
		if before != nil {
			before()
		}
		err := cl.EndTransaction(ctx, kgo.TryCommit)
		if err == nil {
			tx.Outcome = eos.Committed
			for _, r := range tx.Records {
				inputs = append(inputs, r.Input)
			}
		}
		txns = append(txns, tx)
		return err
	}

	frozen := false
	t.Cleanup(func() {
		if frozen {
			x.Signal(syscall.SIGCONT)
		}
	})
	if err := transaction(p, "first", []int32{0, 1}, func() {
		if err := x.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		frozen = true
	}); err != nil {
		t.Fatalf("first transaction: %v", err)
	}
	// The next transaction's add of partition 1 carries the first one's
	// completion: its marker on partition 0 (frozen X) is not written.
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	second := eos.Txn{ID: "second", Outcome: eos.Unknown, Records: []eos.Record{{Input: "second-1", Txn: "second"}}}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: []byte(second.Records[0].String())}).FirstErr(); err != nil {
		t.Fatalf("second transaction: produce: %v", err)
	}
	t.Logf("killing node %d, the coordinator, and resuming node %d", c.ID, x.ID)
	c.Kill()
	killed := time.Now()
	if err := x.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	frozen = false
	// franz-go gives up on a coordinator it cannot dial: end the transaction
	// once the id's partition is led by Y.
	took := poll(t, 30*time.Second, "the coordinator's partition led by its follower", func() bool {
		md, err := metadata(t, y.Addr, cluster.TransactionTopic)
		return err == nil && md.Topics[cluster.TransactionTopic].Partitions[part].Leader == y.ID
	})
	t.Logf("node %d leads %s-%d %v after the kill", y.ID, cluster.TransactionTopic, part, took.Round(time.Millisecond))
	// Nothing writes a record of the id until its next EndTxn: the last one is
	// what the killed coordinator left.
	live := []*testnode.Node{x, y}
	liveOpts := append([]kgo.Opt{seeds(live)}, clientOpts...)
	if !carriedInLog(t, ctx, liveOpts, id, part) {
		t.Fatal("the id's last record in __transaction_state carries no completion")
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		// Unknown: a new client fences the id and aborts what is open.
		t.Logf("second transaction: commit after the kill: %v; a new client goes on", err)
		p = producer()
		t.Logf("the new client's id is ready %v after the kill", time.Since(killed).Round(time.Millisecond))
	} else {
		second.Outcome = eos.Committed
		inputs = append(inputs, second.Records[0].Input)
	}
	txns = append(txns, second)
	if err := transaction(p, "third", []int32{0, 1}, nil); err != nil {
		t.Fatalf("third transaction: %v", err)
	}

	t.Logf("third transaction committed %v after the kill", time.Since(killed).Round(time.Millisecond))
	reads, err := eos.ReadOutput(ctx, liveOpts, topic, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read the output %v after the kill", time.Since(killed).Round(time.Millisecond))
	res := eos.Check(txns, reads, inputs)
	if !res.Ok() {
		t.Fatalf("exactly-once violated: %v", res)
	}
	if !slices.Contains(reads, eos.Record{Input: "first-0", Txn: "first"}) {
		t.Fatal("the first transaction's record on the frozen node's partition was not read")
	}
	rc.wantTV2(t)
	t.Logf("%v", res)
}

// createPlaced creates topic with one partition per replica list of
// assignment, and waits until each is led by its first replica.
func createPlaced(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, assignment ...[]int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for i, replicas := range assignment {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(i), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	poll(t, 30*time.Second, "the assigned leaders of "+topic, func() bool {
		mresp, err := mreq.RequestWith(ctx, cl)
		if err != nil || len(mresp.Topics) != 1 || len(mresp.Topics[0].Partitions) != len(assignment) {
			return false
		}
		for _, p := range mresp.Topics[0].Partitions {
			if p.ErrorCode != 0 || p.Leader != assignment[p.Partition][0] {
				return false
			}
		}
		return true
	})
}

// carriedInLog reports whether the last committed record of transactional id
// id in partition part of __transaction_state carries a completion
// (txn.CompletionTag).
func carriedInLog(t *testing.T, ctx context.Context, opts []kgo.Opt, id string, part int32) bool {
	t.Helper()
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), opts...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		cluster.TransactionTopic: {part: kgo.NewOffset().AtStart()}}))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, cluster.TransactionTopic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(cluster.TransactionTopic, part)
	carried, next := false, int64(0)
	for next < end.Offset && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			var k kmsg.TxnMetadataKey
			var v kmsg.TxnMetadataValue
			if k.ReadFrom(r.Key) != nil || k.TransactionalID != id || v.ReadFrom(r.Value) != nil {
				return
			}
			carried = false
			v.UnknownTags.Each(func(tag uint32, _ []byte) { carried = carried || tag == txn.CompletionTag })
		})
	}
	return carried
}
