package kafkaapi_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/appliance"
)

// txnProducer is a franz-go transactional producer of id on the node at addr.
func txnProducer(t *testing.T, addr, id, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.TransactionalID(id),
		kgo.DefaultProduceTopic(topic), kgo.TransactionTimeout(10 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceTxn produces values in one transaction and commits (commit) or aborts it.
func produceTxn(ctx context.Context, cl *kgo.Client, commit bool, values ...string) error {
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			cl.EndTransaction(ctx, kgo.TryAbort)
			return err
		}
	}
	return cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
}

// consumeAll reads topic from the start until want records arrived or ctx ends.
func consumeAll(ctx context.Context, t *testing.T, addr, topic string, level kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	for len(got) < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// TestTransactionsFranzGo commits and aborts transactions with franz-go's
// transactional producer: read_committed consumers see exactly the committed
// records, read_uncommitted ones everything, ListOffsets answers the last stable
// offset, and a second producer of the same transactional id fences the first.
func TestTransactionsFranzGo(t *testing.T) {
	n := sharedNode(t)
	addr := n.KafkaAddr()
	topic := topicName(t, "")
	createTopic(t, dial(t, addr), topic, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	p := txnProducer(t, addr, topic+"-p", topic)
	for i, step := range []struct {
		commit bool
		values []string
	}{{true, []string{"c1", "c2"}}, {false, []string{"a1", "a2"}}, {true, []string{"c3"}}} {
		if err := produceTxn(ctx, p, step.commit, step.values...); err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
	}
	if got := consumeAll(ctx, t, addr, topic, kgo.ReadCommitted(), 3); !slices.Equal(got, []string{"c1", "c2", "c3"}) {
		t.Fatalf("read_committed read %q, want c1 c2 c3", got)
	}
	if got := consumeAll(ctx, t, addr, topic, kgo.ReadUncommitted(), 5); !slices.Equal(got, []string{"c1", "c2", "a1", "a2", "c3"}) {
		t.Fatalf("read_uncommitted read %q", got)
	}

	// An open transaction holds the last stable offset back.
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(p)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	// Log: c1 c2 | marker | a1 a2 | marker | c3 | marker | open.
	if e, _ := ends.Lookup(topic, 0); e.Offset != 9 {
		t.Fatalf("read_uncommitted end offset %d, want 9", e.Offset)
	}
	if c, _ := committed.Lookup(topic, 0); c.Offset != 8 {
		t.Fatalf("read_committed end offset (LSO) %d, want 8", c.Offset)
	}

	// A new producer of the same id aborts the open transaction and fences p.
	p2 := txnProducer(t, addr, topic+"-p", topic)
	if err := produceTxn(ctx, p2, true, "c4"); err != nil {
		t.Fatalf("new producer: %v", err)
	}
	err = p.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie")}).FirstErr()
	if err == nil {
		err = p.EndTransaction(ctx, kgo.TryCommit)
	}
	if !errors.Is(err, kerr.InvalidProducerEpoch) && !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("fenced producer: got %v, want INVALID_PRODUCER_EPOCH or PRODUCER_FENCED", err)
	}
	got := consumeAll(ctx, t, addr, topic, kgo.ReadCommitted(), 4)
	if !slices.Equal(got, []string{"c1", "c2", "c3", "c4"}) {
		t.Fatalf("read_committed after fencing read %q, want c1 c2 c3 c4", got)
	}
}

// TestTransactionTimeout leaves a transaction open past its timeout: the
// coordinator aborts it under a bumped epoch (the producer's commit then fails),
// and read_committed consumers move past it, with its records listed as aborted.
func TestTransactionTimeout(t *testing.T) {
	n, err := startNode(t.TempDir(), func(c *appliance.Config) { c.Txn.AbortCheckInterval = 50 * time.Millisecond })
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	c := dial(t, n.KafkaAddr())
	f := txnFixture{id: topicName(t, "id"), topic: topicName(t, "")}
	createTopic(t, c, f.topic, 1, nil)
	findTxn := kmsg.NewPtrFindCoordinatorRequest()
	findTxn.SetVersion(1)
	findTxn.CoordinatorKey, findTxn.CoordinatorType = f.id, 1
	findTxnCoordinator(t, c, findTxn)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &f.id, 300
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp := c.do(init).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode == 0 {
			f.pid, f.epoch = resp.ProducerID, resp.ProducerEpoch
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("init: %s", errName(resp.ErrorCode))
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
	// The transaction's timeout runs from its AddPartitionsToTxn: measured from
	// before it, an abort is never early, however slow the produce is.
	started := time.Now()
	wantCode(t, "add partition", f.addPartition(t, c, 0, f.epoch, f.topic).Topics[0].Partitions[0].ErrorCode, 0)
	f.produce(t, c, 0, "left", "open")
	for listOffset(t, c, f.topic, 1) == 0 {
		if time.Since(started) > 30*time.Second {
			t.Fatal("the open transaction was not aborted within 30 s")
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
	if took := time.Since(started); took < 250*time.Millisecond {
		t.Fatalf("aborted after %v, before its 300 ms timeout", took)
	}
	// The marker is at 2; once it is committed (synced) the LSO is past it.
	for lso := listOffset(t, c, f.topic, 1); lso != 3; lso = listOffset(t, c, f.topic, 1) {
		if lso > 3 || time.Since(started) > 30*time.Second {
			t.Fatalf("LSO after the abort: %d, want 3 (two records and the marker)", lso)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
	wantCode(t, "commit after the timeout", f.end(t, c, 0, true), kerr.InvalidProducerEpoch.Code)
	mustProduce(t, c, f.topic, 0, makeBatch(noProducer, "after"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got := consumeAll(ctx, t, n.KafkaAddr(), f.topic, kgo.ReadCommitted(), 1); !slices.Equal(got, []string{"after"}) {
		t.Fatalf("read_committed read %q, want only the record after the aborted transaction", got)
	}
}

// TestListOffsetsByTimestampStable: ListOffsets by timestamp answers a record of
// an open transaction at read_uncommitted, and nothing (offset -1) at
// read_committed until the transaction commits, as Kafka caps the lookup at the
// last stable offset.
func TestListOffsetsByTimestampStable(t *testing.T) {
	n := sharedNode(t)
	addr := n.KafkaAddr()
	topic := topicName(t, "")
	createTopic(t, dial(t, addr), topic, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := txnProducer(t, addr, topic+"-p", topic)
	if err := produceTxn(ctx, p, true, "before"); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Hour) // later than "before"
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	open := &kgo.Record{Value: []byte("open"), Timestamp: at}
	if err := p.ProduceSync(ctx, open).FirstErr(); err != nil {
		t.Fatal(err)
	}
	lookup := func(isolation int8) int64 {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(5)
		req.IsolationLevel = isolation
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = at.UnixMilli()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		pr := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(pr.ErrorCode); err != nil {
			t.Fatal(err)
		}
		return pr.Offset
	}
	if got := lookup(0); got != open.Offset {
		t.Fatalf("read_uncommitted lookup: %d, want the open record's offset %d", got, open.Offset)
	}
	if got := lookup(1); got != -1 {
		t.Fatalf("read_committed lookup: %d, want -1 while the transaction is open", got)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	// The coordinator writes the marker after EndTxn answers.
	for got := lookup(1); got != open.Offset; got = lookup(1) {
		if got != -1 || ctx.Err() != nil {
			t.Fatalf("read_committed lookup after the commit: %d, want %d", got, open.Offset)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
}

// TestAddPartitionsPipelined sends AddPartitionsToTxn requests back to back on one
// connection, as franz-go does (one per partition leader), then a stale one, then
// a transactional Produce to an added partition: the coordinator handles the
// first ones together, the answers keep request order, and the Produce waits
// for the adds before it (else the partition's leader would find it not added:
// INVALID_TXN_STATE).
func TestAddPartitionsPipelined(t *testing.T) {
	n, err := startNode(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	c := dial(t, n.KafkaAddr())
	f := txnFixture{id: topicName(t, "id"), topic: topicName(t, "")}
	createTopic(t, c, f.topic, 3, nil)
	f.pid, f.epoch = initTxnAt(t, c, 0, f.id)
	add := func(p int32, epoch int16) *kmsg.AddPartitionsToTxnRequest {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.SetVersion(3)
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = f.id, f.pid, epoch
		req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: f.topic, Partitions: []int32{p}}}
		return req
	}
	reqs := []kmsg.Request{add(0, f.epoch), add(1, f.epoch), add(2, f.epoch-1)}
	prod := produceRequest(7, -1, f.topic, 0, makeBatchAttrs(batchOpts{producerID: f.pid, epoch: f.epoch}, 0x10, "a"))
	prod.TransactionID = &f.id
	reqs = append(reqs, prod)
	corrs := make([]int32, len(reqs))
	for i, req := range reqs {
		corrs[i] = c.send(req)
	}
	for i, req := range reqs {
		resp := c.recv(req, corrs[i]) // fails on an answer out of order
		var code int16
		switch r := resp.(type) {
		case *kmsg.AddPartitionsToTxnResponse:
			code = r.Topics[0].Partitions[0].ErrorCode
		case *kmsg.ProduceResponse:
			code = r.Topics[0].Partitions[0].ErrorCode
		}
		want := int16(0)
		if i == 2 {
			want = kerr.InvalidProducerEpoch.Code
		}
		wantCode(t, fmt.Sprintf("request %d (%s)", i, kmsg.NameForKey(req.Key())), code, want)
	}
	wantCode(t, "commit", f.end(t, c, 0, true), 0)
	got := consumeAll(context.Background(), t, n.KafkaAddr(), f.topic, kgo.ReadCommitted(), 1)
	if !slices.Equal(got, []string{"a"}) {
		t.Fatalf("read_committed read %q, want a", got)
	}
}
