package kafkaapi_test

// A cluster whose nodes disagree on transaction-version (docs/operations.md,
// "Transaction version 2"): what a transaction version 2 producer meets
// there, as during a rolling restart that turns the setting on.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"skiff/appliance"
)

// TestTxnV2MixedCluster: with one node at transaction-version 2 and one at
// 1, a client that opted into transaction version 2 (franz-go does when any
// broker lists the finalized feature) cannot put a partition led by the node
// at 1 into its transaction, nor one led by the node at 2 when its
// coordinator is on the node at 1; both are answered with codes it retries or
// aborts on, never appended, and never fatal. A transaction wholly on the
// node at 2 commits.
func TestTxnV2MixedCluster(t *testing.T) {
	nodes := startTxnCluster(t, "mixed", 2, 1) // the first at 2, the second at 1
	tv2, tv1 := nodes[0], nodes[1]
	c2, c1 := dial(t, tv2.KafkaAddr()), dial(t, tv1.KafkaAddr())
	for _, tc := range []struct {
		c    *kconn
		name string
		want bool
	}{{c2, "node at 2", true}, {c1, "node at 1", false}} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		resp := tc.c.do(req).(*kmsg.ApiVersionsResponse)
		if got := len(resp.FinalizedFeatures) == 1; got != tc.want {
			t.Fatalf("%s lists finalized features %+v", tc.name, resp.FinalizedFeatures)
		}
	}

	topic := topicName(t, "")
	createTopic(t, c2, topic, 4, nil)
	var part2, part1 int32 = -1, -1 // a partition led by each node
	waitFor(t, 30*time.Second, "a partition led by each node", func() bool {
		for _, p := range metadataTopic(t, c2, topic).Partitions {
			switch {
			case p.ErrorCode != 0:
			case p.Leader == tv2.ID():
				part2 = p.Partition
			case p.Leader == tv1.ID():
				part1 = p.Partition
			}
		}
		return part2 >= 0 && part1 >= 0
	})
	// Create __transaction_state through the node at 2.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(1)
	fc.CoordinatorKey, fc.CoordinatorType = topicName(t, "id"), 1
	findTxnCoordinator(t, c2, fc)

	t.Run("CoordinatorAt2", func(t *testing.T) {
		p := newTV2Producer(t, c2, tv2.ID())
		// The node at 1 serves Produce up to v11, which franz-go then sends
		// without AddPartitionsToTxn: the verification refuses it.
		wantCode(t, "v11 to the node at 1", p.produceAt(t, c1, 11, p.epoch, topic, part1)[0].ErrorCode, kerr.TransactionAbortable.Code)
		wantCode(t, "v12 to the node at 2", p.produceAt(t, c2, 12, p.epoch, topic, part2)[0].ErrorCode, 0)
		if p.inTxn(t, c2, topic, part1) || !p.inTxn(t, c2, topic, part2) {
			t.Fatalf("transaction %+v, want only partition %d", p.describeTxn(t, c2), part2)
		}
		resp := endTxnV5(t, c2, p.id, p.pid, p.epoch, true)
		wantEnded(t, "EndTxn v5 commit", resp, p.pid, p.epoch+1)
		settled(t, c2, topic, part2)
	})
	t.Run("FranzGo", func(t *testing.T) { mixedFranzGo(t, tv2, tv1, c2, topic, part2, part1) })
	t.Run("CoordinatorAt1", func(t *testing.T) {
		p := newTV2Producer(t, c1, tv1.ID())
		code := p.produceAt(t, c2, 12, p.epoch, topic, part2)[0].ErrorCode
		t.Logf("v12 to the node at 2, coordinator at 1: %s", errName(code))
		wantCode(t, "v12 to the node at 2, coordinator at 1", code, kerr.NotEnoughReplicas.Code)
		if st := p.describeTxn(t, c1); st.State != "Empty" {
			t.Fatalf("transaction %+v, want Empty", st)
		}
		// TxnOffsetCommit v5 at a group coordinator at 2: the same add, retriable.
		group := groupCoordinatedOn(t, c2, tv2.ID())
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.SetVersion(5)
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = p.id, group, p.pid, p.epoch, -1
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = part2, 1
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{rp}}}
		resp := c2.do(req).(*kmsg.TxnOffsetCommitResponse)
		wantCode(t, "TxnOffsetCommit v5 at the node at 2, coordinator at 1", resp.Topics[0].Partitions[0].ErrorCode, kerr.CoordinatorNotAvailable.Code)
	})
}

// groupCoordinatedOn returns a group id whose coordinator is broker id,
// reached on c, once that coordinator serves it.
func groupCoordinatedOn(t *testing.T, c *kconn, id int32) string {
	t.Helper()
	for i := range 200 {
		group := topicName(t, fmt.Sprintf("group-%d", i))
		var node int32
		waitFor(t, 30*time.Second, "a coordinator for "+group, func() bool {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey = group
			resp := c.do(req).(*kmsg.FindCoordinatorResponse)
			node = resp.NodeID
			return resp.ErrorCode == 0
		})
		if node != id {
			continue
		}
		waitFor(t, 30*time.Second, "the coordinator of "+group+" to serve it", func() bool {
			of := kmsg.NewPtrOffsetFetchRequest()
			of.SetVersion(5)
			of.Group = group
			return c.do(of).(*kmsg.OffsetFetchResponse).ErrorCode == 0
		})
		return group
	}
	t.Fatalf("no group of 200 is coordinated on broker %d", id)
	return ""
}

// mixedFranzGo: franz-go v1.22.3, knowing both nodes, opts into transaction
// version 2 (the node at 2 lists the feature); its batch to the node at 2
// goes in, the one to the node at 1 is TRANSACTION_ABORTABLE; the transaction
// aborts, and the next one, only on the node at 2, commits.
func mixedFranzGo(t *testing.T, tv2, tv1 *appliance.Node, c2 *kconn, topic string, part2, part1 int32) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var rc requestCounter
	id := newTV2Producer(t, c2, tv2.ID()).id // a transactional id coordinated on the node at 2
	cl, err := kgo.NewClient(kgo.SeedBrokers(tv2.KafkaAddr(), tv1.KafkaAddr()), kgo.Dialer(rc.dial),
		kgo.TransactionalID(id), kgo.TransactionTimeout(10*time.Second), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(3),
		// ApiVersions v4 first, as against Kafka 4.1: franz-go asks v5 first
		// otherwise, learns only the versions from the v0 answer, and reads
		// the feature on its next connection to the broker.
		kgo.MaxVersions(kversion.V4_1_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Learn both brokers' versions, as a client does once it talked to each.
	for _, n := range []*appliance.Node{tv2, tv1} {
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{}
		if _, err := cl.Broker(int(n.ID())).Request(ctx, req); err != nil {
			t.Fatalf("metadata from broker %d: %v", n.ID(), err)
		}
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: part2, Value: []byte("to-2")}).FirstErr(); err != nil {
		t.Fatalf("produce to the node at 2: %v", err)
	}
	err = cl.ProduceSync(ctx, &kgo.Record{Partition: part1, Value: []byte("to-1")}).FirstErr()
	t.Logf("produce to the node at 1: %v; Produce v11 %d, v12 %d, AddPartitionsToTxn %d (v4 %d), EndTxn %d", err,
		rc.count(0, 11), rc.count(0, 12), rc.count(24, -1), rc.count(24, 4), rc.count(26, -1))
	if !errors.Is(err, kerr.TransactionAbortable) {
		t.Fatalf("produce to the node at 1: %v, want TRANSACTION_ABORTABLE", err)
	}
	if n := rc.count(0, 12); n != 1 {
		t.Errorf("Produce v12 sent %d times, want 1 (to the node at 2)", n)
	}
	if n := rc.count(24, -1); n != 0 {
		t.Errorf("AddPartitionsToTxn sent %d times: the client did not opt into transaction version 2", n)
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("abort: %v", err)
	}
	// The next transaction, only on the node at 2, commits.
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: part2, Value: []byte("again")}).FirstErr(); err != nil {
		t.Fatalf("produce to the node at 2: %v", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	settled(t, c2, topic, part2)
	// The CoordinatorAt2 subtest committed one record there before.
	if got := readCommitted(t, c2, topic, part2); slices.Contains(got, "to-2") || !slices.Contains(got, "again") {
		t.Fatalf("read_committed on the node at 2: %q, want the committed record and not the aborted one", got)
	}
	if n := rc.count(26, 5); n != 2 {
		t.Errorf("EndTxn v5 sent %d times, want 2", n)
	}
}
